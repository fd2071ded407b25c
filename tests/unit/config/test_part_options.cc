// config/part_options.h: the options each part takes, made from the Config.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "config/part_options.h"

using namespace msd;

TEST_CASE("part options: cost_options carries every model option", "[config]") {
  Config c;
  c.model = ModelConfig{2048, 12, 512, 3, 7000.0, 0.25, "", 40.0};
  const CostOptions o = cost_options(c);
  CHECK(o.hidden == 2048);
  CHECK(o.layers == 12);
  CHECK(o.vision_hidden == 512);
  CHECK(o.vision_layers == 3);
  CHECK(o.cost_a == 7000.0);
  CHECK(o.cost_vision_scale == 0.25);
  CHECK(o.preset.empty());
  CHECK(o.cost_micro_batch == 40.0);
  const CostModel cost = make_cost_model(c);
  CHECK(cost.a == 7000.0);
  CHECK(cost.vision_scale == 0.25);
  CHECK(cost.micro_batch == 40.0);
  // A preset gives the shape: llama3-8b is 4096 wide, so a = 6 * 4096.
  c.model.cost_a = 0.0;
  c.model.preset = "llama3-8b";
  CHECK(make_cost_model(c).a == 6.0 * 4096);
  CHECK(make_device_model(c).model.name == "llama3-8b");
}

TEST_CASE("part options: packing follows the mode; the baselines keep Megatron's rows", "[config]") {
  Config c;
  c.job.seq_len = 1024;
  c.job.steps = 50;
  c.job.micro_batch_shape = RowShape::varlen;
  c.job.hold_above = 1.5;
  c.job.hold_steps = 4;
  c.topology.dp = 4;
  c.job.named_mode = TrainingMode::msd_kk;
  c.job.balance = BalanceMethod::greedy;
  PackOptions pack = make_pack_options(c);
  CHECK(pack.balance == BalanceMethod::karmarkar_karp);  // the mode names its balance
  CHECK(pack.varlen);
  CHECK(pack.dp == 4);
  CHECK(pack.hold.above == 1536);
  CHECK(pack.hold.max_steps == 4);
  CHECK(pack.hold.release == 4);
  CHECK(pack.hold.last_step == 49);
  c.job.named_mode = TrainingMode::colocated_tokens;
  pack = make_pack_options(c);
  CHECK_FALSE(pack.varlen);
  CHECK_FALSE(pack.hold.enabled());
}

TEST_CASE("part options: the demand and the assignment read the sources' weight curves", "[config]") {
  Config c;
  c.job.steps = 30;
  c.job.global_batch = 8;
  c.emulator.time_scale = 0.5;
  c.schedule = ScheduleKind::piecewise;
  c.sources.resize(2);
  c.sources[0].name = "web";
  c.sources[0].weight = {{0, 0.75}, {10, 0.25}};
  c.sources[1].name = "code";
  c.sources[1].weight = {{0, 0.25}, {10, 0.75}};
  const DemandOptions job = demand_options(c);
  CHECK(job.names == std::vector<std::string>{"web", "code"});
  CHECK(job.weights.size() == 2);
  CHECK(job.weights[1].size() == 2);
  CHECK(job.weights[1][1].weight == 0.75);
  CHECK(job.steps == 30);
  CHECK(job.global_batch == 8);
  CHECK(job.time_scale == 0.5);
  CHECK(schedule_points(job) == std::vector<uint64_t>{0, 10, 29});
  CHECK(make_schedule(c).weights(10) == std::vector<double>{0.25, 0.75});
  std::vector<SourceProfile> profiles(2);
  profiles[0].positions_per_sample = 300;
  profiles[1].positions_per_sample = 900;
  const PartitionDemand demand = make_demand(c, profiles, 0.0);
  CHECK(demand.steps_per_s == make_demand(job, profiles, 0.0).steps_per_s);
  CHECK(demand.steps_per_s[0] > demand.steps_per_s[1]);  // more of the long documents from step 10
}
