// The fit msd-bench fanout extrapolates with: exact on exact data, and
// honest when the rows cannot tell data groups from clients apart.
#include <catch2/catch.hpp>

#include "bench/fanout.h"

using Catch::Matchers::WithinAbs;
using msd::bench::fit_fanout;

TEST_CASE("fanout fit recovers base, per-group and per-client costs") {
  const std::vector<double> groups = {16, 4, 32, 8, 64, 16}, clients = {16, 16, 32, 32, 64, 64};
  std::vector<double> y;
  for (size_t i = 0; i < groups.size(); ++i) y.push_back(0.5 + 0.02 * groups[i] + 0.003 * clients[i]);
  const auto fit = fit_fanout(groups, clients, y);
  CHECK(fit.separated);
  CHECK_THAT(fit.base, WithinAbs(0.5, 1e-9));
  CHECK_THAT(fit.per_group, WithinAbs(0.02, 1e-9));
  CHECK_THAT(fit.per_client, WithinAbs(0.003, 1e-9));
  CHECK_THAT(fit.at(512, 4096), WithinAbs(0.5 + 0.02 * 512 + 0.003 * 4096, 1e-9));
}

TEST_CASE("fanout fit with one data-group size fits clients alone") {
  const std::vector<double> clients = {8, 16, 32, 64};
  std::vector<double> y;
  for (double c : clients) y.push_back(1.0 + 0.1 * c);
  const auto fit = fit_fanout(clients, clients, y);  // tp = 1: groups == clients
  CHECK_FALSE(fit.separated);
  CHECK(fit.per_group == 0.0);
  CHECK_THAT(fit.base, WithinAbs(1.0, 1e-9));
  CHECK_THAT(fit.per_client, WithinAbs(0.1, 1e-9));
}

TEST_CASE("fanout placement is measured at the asked size") {
  msd::bench::FanoutOptions options;
  // A step of 16 groups x 8 documents, packed and balanced for real.
  CHECK(msd::bench::placement_cpu_ms(options, 16, 2, false) > 0.0);
  CHECK(msd::bench::placement_cpu_ms(options, 16, 3, true) > 0.0);
}

TEST_CASE("fanout estimates add the handling fit and the placement measured at the size") {
  msd::bench::FanoutOptions options;
  msd::bench::FanoutReport report;
  report.handling_cpu_ms = {0.1, 0.002, 0.0005, true};
  report.placement_in_run_factor = 1.5;
  const auto p = msd::bench::extrapolate(options, report, 128, 8);  // 16 groups
  CHECK(p.groups == 16);
  CHECK(msd::bench::estimate_key(p) == "gpus128_tp8");
  CHECK_THAT(p.handling_cpu_ms_per_step, WithinAbs(0.1 + 0.002 * 16 + 0.0005 * 128, 1e-12));
  CHECK(p.placement_cpu_ms_per_step > 0.0);
  CHECK_THAT(p.cpu_ms_per_step, WithinAbs(p.handling_cpu_ms_per_step + p.placement_cpu_ms_per_step, 1e-12));
  CHECK_THAT(p.in_run_cpu_ms_per_step,
             WithinAbs(p.handling_cpu_ms_per_step + 1.5 * p.placement_cpu_ms_per_step, 1e-12));
}
