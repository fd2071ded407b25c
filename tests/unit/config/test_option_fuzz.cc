// The option fuzz: every option of the table, each with a list of hostile
// values, through the real command-line parser and validate(). Each value is
// refused with a ConfigError that names the option, or is one of the few
// listed below as valid (a seed may be any 64-bit number; 0 means "none" for
// several counts). Nothing else may escape: no other exception, no crash.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "config/option_table.h"
#include "msd/config.h"

namespace {

const std::vector<std::string> kHostile = {
    "nan", "inf", "-inf", "1e308", "-1e308", "1e-320", "-1", "-0", "0", "4294967295", "4294967296",
    "9223372036854775807", "18446744073709551615", "18446744073709551616", "0x10", "1e3", " ", "",
    std::string(4096, '7'), "\xff\xfe", "1,2", "3 4",
};

// Free-form text (paths, names, a regex): any text is a value; the fuzz
// only checks that nothing but a ConfigError escapes.
const std::set<std::string> kFreeText = {
    "tokenizer.vocab", "tokenizer.pattern", "tokenizer.hf", "tokenizer.eod_token", "loader.cache_dir",
    "output.summary_json", "output.metrics", "checkpoint.dir", "checkpoint.trace", "topology.partition_plan",
    "mix.megatron_blend", "mix.sources", "checkpoint.snapshot_sources", "source.web.path", "source.web.text_field",
    "source.web.caption_field", "source.web.image_field",
};

// The hostile values that are valid, each with why.
const std::set<std::string> kValid = {
    // Any 64-bit number is a seed.
    "job.seed=0", "job.seed=4294967295", "job.seed=4294967296", "job.seed=9223372036854775807",
    "job.seed=18446744073709551615",
    // 0 means none, never, false or "derive it" for these; -1 (and -0, which
    // reads as 0) is "none" for a few.
    "job.max_positions_per_micro_batch=0", "job.stall_timeout_s=0", "job.startup_timeout_s=0",
    "topology.shadow_loaders=0", "topology.ranks_per_node=0", "topology.scaling_lookahead_steps=0",
    "topology.scaling_interval_steps=0", "tokenizer.append_eod=0", "image.token_id=0", "image.token_id=-1",
    "image.token_id=-0", "model.vision_hidden=0", "model.vision_layers=0", "model.cost_a=0", "model.cost_a=-0",
    "model.cost_vision_scale=0", "model.cost_vision_scale=-0", "model.preset= ", "emulator.time_scale=0",
    "emulator.time_scale=-0", "output.progress_every=0", "checkpoint.loader_every=0", "checkpoint.resume=0",
    "checkpoint.resume_step=0", "checkpoint.resume_step= ",
    "checkpoint.accept_changed_data=0", "checkpoint.accept_changed_mix=0", "checkpoint.start_over=0", "fault.loader=-1", "fault.loader=-0",
    "fault.loader=0", "fault.rank=-1", "fault.step=0", "fault.stall_ms=0", "source.web.read_delay_us=0",
    "source.web.max_read_bytes=0", "source.web.cache_mib=0", "job.hold_above=0", "job.hold_above=-0", "model.cost_micro_batch=0",
    "model.cost_micro_batch=-0",
    // A real number within its bound: a tiny or 1000-fold one is still a number.
    "model.cost_a=1e-320", "model.cost_a=1e3", "model.cost_vision_scale=1e-320", "model.cost_vision_scale=1e3",
    "emulator.time_scale=1e-320", "emulator.time_scale=1e3", "source.web.weight=1e-320", "source.web.weight=1e3",
    "job.hold_above=1e3", "model.cost_micro_batch=1e-320", "model.cost_micro_batch=1e3",
    "model.cost_micro_batch=4294967295", "model.cost_micro_batch=4294967296",
    // Within bounds above 2^32.
    "job.max_positions_per_micro_batch=4294967295", "job.max_positions_per_micro_batch=4294967296",
    "source.web.max_read_bytes=4294967295", "source.web.max_read_bytes=4294967296",
    "job.steps=4294967295", "job.steps=4294967296", "topology.scaling_lookahead_steps=4294967295",
    "topology.scaling_lookahead_steps=4294967296", "topology.scaling_interval_steps=4294967295",
    "topology.scaling_interval_steps=4294967296", "output.progress_every=4294967295",
    "checkpoint.planner_every=4294967295", "checkpoint.planner_every=4294967296", "checkpoint.loader_every=4294967295",
    "checkpoint.loader_every=4294967296", "fault.step=4294967295", "fault.step=4294967296",
};

// Whether a refusal names `key`: itself, or its family for a check over
// every source ("source.*.weight").
bool names(const std::string& message, const std::string& key) {
  if (message.find(key) != std::string::npos) return true;
  return key.rfind("source.", 0) == 0 && message.find("source.*." + key.substr(key.rfind('.') + 1)) != std::string::npos;
}

msd::Invocation parse(const std::string& option) {
  std::vector<std::string> args = {"msd-run",
                                   "--mix.sources=web",
                                   "--source.web.format=jsonl",
                                   "--source.web.path=/data/web-*.jsonl",
                                   "--tokenizer.vocab=/data/vocab.tiktoken",
                                   "--checkpoint.dir=/tmp/ckpt",
                                   option};
  std::vector<const char*> argv;
  for (const auto& arg : args) argv.push_back(arg.c_str());
  return msd::parse_command_line(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("config: the option fuzz refuses every hostile value it does not list as valid", "[config]") {
  std::vector<std::string> keys;
  for (const auto& section : msd::option_table::static_sections())
    for (const auto& option : section.options) keys.push_back(option.key);
  for (const auto& option : msd::option_table::source_section("web").options) keys.push_back(option.key);
  REQUIRE(keys.size() > 60);

  std::vector<std::string> accepted_unlisted, unnamed, escaped;
  std::set<std::string> accepted;
  for (const std::string& key : keys) {
    if (key == "mix.sources") continue;  // the base names its source
    for (const std::string& value : kHostile) {
      const std::string setting = key + "=" + value;
      try {
        (void)parse("--" + setting);
        accepted.insert(setting);
        if (!kFreeText.count(key) && !kValid.count(setting)) accepted_unlisted.push_back(setting.substr(0, 80));
      } catch (const msd::ConfigError& e) {
        if (!kFreeText.count(key) && !names(e.what(), key))
          unnamed.push_back(setting.substr(0, 60) + " -> " + e.what());
      } catch (const std::exception& e) {
        escaped.push_back(setting.substr(0, 60) + " -> " + e.what());
      }
    }
  }
  INFO("hostile values accepted that the fuzz does not list as valid:\n  " << Catch::Detail::stringify(accepted_unlisted));
  CHECK(accepted_unlisted.empty());
  INFO("refusals that do not name the option:\n  " << Catch::Detail::stringify(unnamed));
  CHECK(unnamed.empty());
  INFO("exceptions other than ConfigError:\n  " << Catch::Detail::stringify(escaped));
  CHECK(escaped.empty());
  std::vector<std::string> listed_refused;  // the list stays true to the parser
  for (const std::string& setting : kValid)
    if (!accepted.count(setting)) listed_refused.push_back(setting);
  INFO("listed as valid but refused:\n  " << Catch::Detail::stringify(listed_refused));
  CHECK(listed_refused.empty());
}
