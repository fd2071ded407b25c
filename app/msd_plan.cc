// msd-plan: offline planning tools. `simulate` plans steps for an emulated
// cluster from synthetic metadata and reports planner time and balance per
// balance method (lib/plan/simulate.h); with --compare, every training mode's
// throughput on the device model (lib/plan/simulate_compare.h).
#include <boost/program_options.hpp>

#include <iostream>
#include <string>

#include "common/error.h"
#include "plan/simulate.h"
#include "plan/simulate_compare.h"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  msd::SimulateOptions options;
  msd::CompareOptions compare;
  std::string command, methods, long_docs = "split";
  po::options_description described(
      "Usage: msd-plan simulate [options]\n\n"
      "Plans --steps steps for an emulated cluster from synthetic heavy-tailed metadata\n"
      "(short web text, long documents, image-text), with no data and no MPI, once per\n"
      "balance method, and prints the planner's milliseconds per step (one core) and the\n"
      "balance reached: DP max/mean cost, its lower bound, micro-batch max/mean and DP\n"
      "max/mean positions (median and worst over steps). docs/cost-and-balance.md.\n"
      "With --compare: every training mode (colocated_samples, colocated_tokens,\n"
      "msd_tokens, msd_greedy, msd_kk) places the same steps and the device model\n"
      "(--model, --vision, --device) times them: tokens/s, padding, DP and micro-batch\n"
      "max/mean, bubbles, and msd's speedups over the baselines. docs/evaluation.md.\n\n"
      "Options");
  described.add_options()
      ("help,h", "print this help and exit")
      ("gpus", po::value(&options.gpus)->default_value(options.gpus), "emulated GPUs: dp = gpus / (tp*pp*cp)")
      ("dp", po::value(&options.dp)->default_value(options.dp), "data-parallel ranks directly (0: from --gpus)")
      ("tp", po::value(&options.tp)->default_value(options.tp), "tensor-parallel size")
      ("pp", po::value(&options.pp)->default_value(options.pp), "pipeline-parallel size")
      ("cp", po::value(&options.cp)->default_value(options.cp), "context-parallel size")
      ("samples-per-gpu", po::value(&options.samples_per_gpu)->default_value(options.samples_per_gpu),
       "samples per step per data-parallel rank (one model replica of tp*pp*cp GPUs)")
      ("seq-len", po::value(&options.seq_len)->default_value(options.seq_len), "positions per packed sequence")
      ("micro-batches", po::value(&options.micro_batches)->default_value(options.micro_batches),
       "micro-batches per rank and step")
      ("steps", po::value(&options.steps)->default_value(options.steps), "steps to plan")
      ("seed", po::value(&options.seed)->default_value(options.seed), "seed of the synthetic metadata")
      ("long-docs", po::value(&long_docs)->default_value(long_docs), "split | truncate")
      ("hidden", po::value(&options.model.hidden)->default_value(options.model.hidden), "model hidden size (a = 6*hidden)")
      ("layers", po::value(&options.model.layers)->default_value(options.model.layers), "model layers")
      ("cost-a", po::value(&options.cost_a)->default_value(options.cost_a), "the cost model's a directly (0: 6*hidden)")
      ("tflops", po::value(&options.tflops)->default_value(options.tflops), "device speed for the step-time column")
      ("long-share", po::value(&options.long_share)->default_value(options.long_share), "share of long documents")
      ("image-share", po::value(&options.image_share)->default_value(options.image_share), "share of image-text samples")
      ("methods", po::value(&methods), "comma-separated balance methods (default: tokens,greedy,karmarkar_karp)")
      ("compare", "evaluate every training mode on the device model instead")
      ("model", po::value(&compare.model_preset)->default_value(compare.model_preset),
       "--compare: language model preset (llama3-8b, llama3-70b)")
      ("vision", po::value(&compare.vision_preset)->default_value(compare.vision_preset),
       "--compare: vision tower preset for image patches (vit-l), or none")
      ("device", po::value(&compare.device_preset)->default_value(compare.device_preset), "--compare: GPU preset (h100, h200)")
      ("json", "print the report as JSON");
  po::positional_options_description positional;
  positional.add("command", 1);
  po::options_description hidden;
  hidden.add_options()("command", po::value(&command));
  po::options_description all;
  all.add(described).add(hidden);
  try {
    po::variables_map values;
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), values);
    po::notify(values);
    if (values.count("help")) {
      std::cout << described << '\n';
      return 0;
    }
    if (command != "simulate") throw msd::ConfigError("expected the command 'simulate' (see --help)");
    if (long_docs != "split" && long_docs != "truncate") throw msd::ConfigError("--long-docs: split or truncate");
    options.long_docs = long_docs == "split" ? msd::LongDocs::split : msd::LongDocs::truncate;
    if (values.count("methods")) {
      options.methods.clear();
      size_t begin = 0;
      while (begin <= methods.size()) {
        const size_t comma = std::min(methods.find(',', begin), methods.size());
        options.methods.push_back(msd::parse_balance_method(methods.substr(begin, comma - begin), "--methods"));
        begin = comma + 1;
      }
    }
    if (values.count("compare")) {
      const msd::CompareReport report = msd::compare_modes(options, compare);
      if (values.count("json"))
        std::cout << msd::compare_json(report) << '\n';
      else
        msd::print_compare(report, std::cout);
      return 0;
    }
    const msd::SimulateReport report = msd::simulate(options);
    if (values.count("json"))
      std::cout << msd::report_json(report) << '\n';
    else
      msd::print_report(report, std::cout);
    return 0;
  } catch (const po::error& error) {
    std::cerr << "msd-plan: " << error.what() << " (see --help)\n";
  } catch (const msd::Error& error) {
    std::cerr << "msd-plan: " << error.what() << '\n';
  }
  return 2;
}
