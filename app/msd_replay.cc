// msd-replay: offline checks and questions on a plan trace, with no MPI
// launch and no data access (lib/checkpoint/replay.h; docs/trace.md).
//
//   msd-replay verify TRACE [--checkpoint FILE]
//   msd-replay query TRACE --rank R --step S | --mix | --balance
//   msd-replay export TRACE --format csv|json [--out FILE]
#include <fstream>
#include <iostream>
#include <string>

#include "checkpoint/file_kind.h"
#include "checkpoint/replay.h"
#include "cli.h"
#include "checkpoint/trace.h"
#include "common/error.h"

namespace po = msd::cli::po;

namespace {

constexpr const char* kUsage =
    "usage: msd-replay verify TRACE [--checkpoint FILE]\n"
    "       msd-replay query TRACE (--rank R --step S | --mix | --balance)\n"
    "       msd-replay export TRACE --format csv|json [--out FILE]\n"
    "\n"
    "verify  checks TRACE (and the checkpoint) against their checksum chains, re-plans every step\n"
    "        from the configuration and seed (mixing quotas, stream cursors, packing, balancing, costs)\n"
    "        and compares, printing the first divergence with its step, data group, client ranks and\n"
    "        what differs; when the run's data files resolve, checks them against the trace's data\n"
    "        fingerprint. Exit 0: identical; 1: divergence; 4: a file was changed after it was written\n"
    "        (tampering, with where); 5: no divergence, but the data changed since the run; 6: intact\n"
    "        but cut: the run did not close the trace (killed after its last flush, or still running);\n"
    "        2: a bad command line, or a TRACE or --checkpoint that is not one (named as what it is).\n"
    "query   --rank R --step S: the pieces client R (0..clients-1) received at step S;\n"
    "        --mix: realized samples per step and source against the schedule's target;\n"
    "        --balance: per-step max/mean cost over DP ranks and micro-batches.\n"
    "export  one row per piece as CSV or JSON, to --out or standard output.\n"
    "Run `msd-replay COMMAND --help` for a command's options.\n";

}  // namespace

int main(int argc, char** argv) {
  std::string command, trace_path, checkpoint, format, out_path;
  int rank = -1;
  uint64_t step = 0;
  po::options_description verify_options("verify options");
  verify_options.add_options()("checkpoint", po::value(&checkpoint)->value_name("FILE"),
                               "planner checkpoint of the trace's first step, for a trace begun by a resume "
                               "(default: planner-<first step>.h5 beside the trace)");
  po::options_description query_options("query options");
  query_options.add_options()("rank", po::value(&rank)->value_name("R"), "client index (0 .. dp*pp*cp*tp - 1)")(
      "step", po::value(&step)->value_name("S"), "step")("mix", "realized mix against the schedule, per step (CSV)")(
      "balance", "balance statistics per step (CSV)");
  po::options_description export_options("export options");
  export_options.add_options()("format", po::value(&format)->value_name("csv|json"), "output format")(
      "out", po::value(&out_path)->value_name("FILE"), "write here instead of standard output");
  po::options_description common("options");
  common.add_options()("help,h", "print help and exit");
  po::options_description hidden;
  hidden.add_options()("command", po::value(&command))("trace", po::value(&trace_path));
  po::positional_options_description positional;
  positional.add("command", 1).add("trace", 1);
  po::options_description all;
  all.add(common).add(verify_options).add(query_options).add(export_options).add(hidden);
  return msd::cli::guarded("msd-replay", [&] {
    po::variables_map values;
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), values);
    po::notify(values);
    const bool help = values.count("help") > 0;
    if (command.empty() || (help && command != "verify" && command != "query" && command != "export")) {
      std::cout << kUsage;
      return help ? 0 : 2;
    }
    if (help) {
      std::cout << kUsage << '\n'
                << (command == "verify" ? verify_options : command == "query" ? query_options : export_options)
                << '\n';
      return 0;
    }
    if (trace_path.empty()) throw msd::ConfigError(msd::str(command, ": the TRACE file is missing"));
    // A file of another kind is named as what it is, never as damaged.
    msd::require_file_kind(trace_path, msd::FileKind::trace, "TRACE");
    // verify checks the file's integrity before anything reads it.
    if (command == "verify") return msd::verify_command(trace_path, checkpoint, std::cout);
    const msd::TraceReader trace(trace_path);

    if (command == "query") {
      const int chosen = (values.count("rank") > 0) + (values.count("mix") > 0) + (values.count("balance") > 0);
      if (chosen != 1) throw msd::ConfigError("query: give one of --rank R --step S, --mix, --balance");
      if (values.count("mix")) msd::print_mix(trace, std::cout);
      else if (values.count("balance")) msd::print_balance(trace, std::cout);
      else {
        if (!values.count("step")) throw msd::ConfigError("query --rank: --step S is needed");
        msd::print_client_step(trace, rank, step, std::cout);
      }
      return 0;
    }
    if (command == "export") {
      if (format.empty()) throw msd::ConfigError("export: --format csv|json is needed");
      if (out_path.empty()) {
        msd::export_trace(trace, format, std::cout);
      } else {
        std::ofstream out(out_path, std::ios::binary);
        if (!out) throw msd::IoError(msd::str("cannot create ", out_path));
        msd::export_trace(trace, format, out);
        out.close();
        if (!out) throw msd::IoError(msd::str("cannot write ", out_path));
      }
      return 0;
    }
    throw msd::ConfigError(msd::str("unknown command '", command, "' (verify, query or export)"));
  });
}
