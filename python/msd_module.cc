// msd._msd: the pybind11 module under the Python package msd (python/msd/).
// It wraps msd::Job with a deferred start and hands out each step's arrays as
// numpy views of the Client's own buffers (no copy); python/msd/ turns them
// into torch tensors and enforces "valid until the next step" (docs/python.md).
// Communicators cross as Fortran handles (mpi4py's Comm.py2f / Comm.f2py).
#include <mpi.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "msd/client.h"
#include "msd/error.h"  // Error, ConfigError, TrainerError
// Beyond the public API (msd::internal; python/CMakeLists.txt says why):
#include "construct/batch_builder.h"  // batch_digest
#include "runtime/fatal.h"            // abort_job(text, status), end_by_signal
#include "transport/mpi.h"            // MSD_MPI, wait: the summary's broadcast

namespace py = pybind11;

namespace msd {
namespace {

const char* role_text(Role role) {
  return role == Role::planner ? "planner" : role == Role::loader ? "loader" : "client";
}

// An exception of the script (uncaught, or leaving `with msd.Job(...)`)
// ends the whole job at once with one line: python/msd/job.py's hooks call
// this before anything could enter a collective. `kind` picks the status:
// "config" (msd.ConfigError: 2), "msd" (another msd.Error: 3), "exit" (the
// script's own sys.exit status), else the trainer's own (5).
[[noreturn]] void abort_for(const std::string& kind, const std::string& text, int status) {
  if (kind == "config") abort_job(ConfigError(text));
  if (kind == "msd") abort_job(Error(text));
  if (kind == "exit") abort_job(text, status);
  abort_job(TrainerError(text));
}

// One msd::Job and the step it has handed out. Methods that wait on other
// ranks release the GIL.
class PythonJob {
 public:
  PythonJob(const std::vector<std::string>& argv, int64_t comm_handle) {
    std::vector<const char*> args;
    for (const auto& a : argv) args.push_back(a.c_str());
    config_ = parse_command_line(static_cast<int>(args.size()), args.data()).config;
    const MPI_Comm comm = MPI_Comm_f2c(static_cast<MPI_Fint>(comm_handle));
    py::gil_scoped_release release;
    job_ = std::make_unique<Job>(config_, comm, Job::DeferStart{});
  }
  PythonJob(const PythonJob&) = delete;
  PythonJob& operator=(const PythonJob&) = delete;

  ~PythonJob() {
    // At interpreter exit mpi4py may have finalized MPI already: freeing
    // windows and communicators then would abort, so the Job is left behind.
    // Otherwise ~Job frees them only on the orderly path and ends the job
    // when it is dropped mid-stream.
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) (void)job_.release();
    (void)kept_.release();  // see close()
  }

  Job& job() const {
    if (!job_) throw Error("the msd job is closed (finish() was called)");
    return *job_;
  }
  const Config& config() const { return config_; }

  int64_t comm(const std::string& name) const {
    const Job& j = job();
    const MPI_Comm c = name == "dp"        ? j.dp_comm()
                       : name == "tp"      ? j.tp_comm()
                       : name == "cp"      ? j.cp_comm()
                       : name == "pp"      ? j.pp_comm()
                       : name == "clients" ? j.clients_comm()
                                           : MPI_COMM_NULL;
    return MPI_Comm_c2f(c);
  }

  void start(std::optional<uint64_t> resume_step) {
    py::gil_scoped_release release;
    job().start(resume_step);
  }

  // A failure while serving or building a step cannot be survived (the
  // stream is broken and peers wait inside MPI): like msd-run, it ends the
  // whole job at once with one line (abort_job), never unwinding into the
  // Job's collective frees.
  void serve() {
    Job& j = job();
    py::gil_scoped_release release;
    try {
      j.serve();
    } catch (const std::exception& e) {
      abort_job(e);
    }
  }

  // Builds the next step in place; false after the last.
  bool next() {
    Client& client = job().client();
    py::gil_scoped_release release;
    try {
      batch_ = client.next();
    } catch (const std::exception& e) {
      abort_job(e);
    }
    return batch_ != nullptr;
  }

  const Batch& batch() const {
    if (!batch_ || !job_) throw Error("no current batch");
    return *batch_;
  }
  const MicroBatch& micro(size_t index) const { return batch().micro_batches.at(index); }

  // The summary as JSON, on every rank (finish() leaves it on rank 0 only).
  std::string finish(uint64_t steps, double compute_seconds, double wall_seconds, int64_t comm_handle) {
    py::gil_scoped_release release;
    TrainerStats stats;
    stats.steps = steps;
    stats.compute_seconds = compute_seconds;
    stats.wall_seconds = wall_seconds;
    // As in serve() and next(): a failure here ends the job at once, whether
    // or not Python runs under `-m mpi4py`.
    try {
      std::string json = job().finish(stats).json;
      // Over the live ranks: a loader a shadow took over may never join.
      const MPI_Comm live = job().live_comm();
      const MPI_Comm comm = live != MPI_COMM_NULL ? live : MPI_Comm_f2c(static_cast<MPI_Fint>(comm_handle));
      uint64_t bytes = json.size();
      MPI_Request request;
      MSD_MPI(MPI_Ibcast(&bytes, 1, MPI_UINT64_T, 0, comm, &request), "broadcasting the summary's size");
      wait(request, "broadcasting the summary's size");
      json.resize(bytes);
      MSD_MPI(MPI_Ibcast(json.data(), checked_cast<int>(bytes), MPI_CHAR, 0, comm, &request),
              "broadcasting the summary");
      wait(request, "broadcasting the summary");
      return json;
    } catch (const std::exception& e) {
      abort_job(e);
    }
  }

  // Collective over the world (frees windows and communicators): every rank
  // closes at the same point of the program, not whenever Python collects.
  // When a loader did not confirm the stop (a shadow took it over), the
  // windows cannot be freed (it would never join): the Job is kept, and
  // end_after_takeover() ends the job as msd-run does. Returns whether that
  // is needed.
  bool close() {
    batch_ = nullptr;
    py::gil_scoped_release release;
    if (job_ && job_->started() && job_->loaders_gone()) {
      kept_ = std::move(job_);
      return true;
    }
    job_.reset();
    return false;
  }

  // At interpreter exit (job.py registers it): once every live rank is here,
  // the planner ends the job with MPI_Abort and status 0 (Job::shutdown),
  // which also ends the loader that never stopped; MPI_Finalize would wait
  // for it forever.
  void end_after_takeover() {
    if (!kept_) return;
    py::gil_scoped_release release;
    MPI_Request request;
    MSD_MPI(MPI_Ibarrier(kept_->live_comm(), &request), "waiting for the live ranks at exit");
    wait(request, "waiting for the live ranks at exit");
    kept_->shutdown();  // the planner does not return; the others wait in MPI_Finalize for its abort
  }

 private:
  Config config_;
  std::unique_ptr<Job> job_;
  std::unique_ptr<Job> kept_;  // closed after a takeover: never destroyed (end_after_takeover)
  const Batch* batch_ = nullptr;
};

// A numpy view of `values` whose base keeps `owner` (the PythonJob) alive.
template <typename T>
py::array view(const std::vector<T>& values, std::vector<py::ssize_t> shape, py::handle owner) {
  if (values.empty()) {
    for (auto& d : shape) d = d < 0 ? 0 : d;
    return py::array(py::dtype::of<T>(), shape);  // nothing to share; no base pointer to hold
  }
  py::ssize_t known = 1;
  for (auto d : shape)
    if (d >= 0) known *= d;
  for (auto& d : shape)
    if (d < 0) d = static_cast<py::ssize_t>(values.size()) / std::max<py::ssize_t>(known, 1);
  return py::array(py::dtype::of<T>(), shape, values.data(), owner);
}

py::array field(py::object self, size_t index, const std::string& name) {
  const PythonJob& job = self.cast<const PythonJob&>();
  const MicroBatch& mb = job.micro(index);
  const auto rows = static_cast<py::ssize_t>(mb.sequences), cols = static_cast<py::ssize_t>(mb.local_len());
  const auto patch = static_cast<py::ssize_t>(job.config().image.patch);
  if (name == "tokens") return view(mb.tokens, {rows, cols}, self);
  if (name == "labels") return view(mb.labels, {rows, cols}, self);
  if (name == "positions") return view(mb.positions, {rows, cols}, self);
  if (name == "loss_mask") return view(mb.loss_mask, {rows, cols}, self);
  if (name == "cu_seqlens") return view(mb.cu_seqlens, {-1}, self);
  if (name == "patch_positions") return view(mb.patch_positions, {-1}, self);
  if (name == "patches") return view(mb.patches, {-1, patch, patch, 3}, self);
  throw Error("no batch field named " + name);
}

template <typename T>
std::vector<T> values_of(const py::dict& fields, const char* name) {
  const auto array = fields[name].cast<py::array_t<T, py::array::c_style | py::array::forcecast>>();
  return std::vector<T>(array.data(), array.data() + array.size());
}

// msd's digest of a batch given as arrays (copied): lets a test check that
// the tensors a trainer sees hold exactly the batch msd built.
uint64_t digest_of(uint64_t step, const std::vector<py::dict>& micro_batches) {
  Batch batch;
  batch.step = step;
  for (const py::dict& f : micro_batches) {
    MicroBatch mb;
    mb.sequences = f["sequences"].cast<uint32_t>();
    mb.seq_len = f["seq_len"].cast<uint32_t>();
    mb.cp_rank = f["cp_rank"].cast<uint32_t>();
    mb.cp_size = f["cp_size"].cast<uint32_t>();
    mb.has_inputs = f["has_inputs"].cast<bool>();
    mb.has_targets = f["has_targets"].cast<bool>();
    mb.cp_by_segment = f.contains("cp_by_segment") && f["cp_by_segment"].cast<bool>();
    mb.tokens = values_of<int32_t>(f, "tokens");
    mb.labels = values_of<int32_t>(f, "labels");
    mb.positions = values_of<int32_t>(f, "positions");
    mb.loss_mask = values_of<uint8_t>(f, "loss_mask");
    mb.cu_seqlens = values_of<int32_t>(f, "cu_seqlens");
    mb.patch_positions = values_of<int32_t>(f, "patch_positions");
    mb.patches = values_of<uint8_t>(f, "patches");
    batch.micro_batches.push_back(std::move(mb));
  }
  return batch_digest(batch);
}

py::dict micro_info(const PythonJob& job, size_t index) {
  const MicroBatch& mb = job.micro(index);
  py::dict info;
  info["sequences"] = mb.sequences;
  info["seq_len"] = mb.seq_len;
  info["cp_rank"] = mb.cp_rank;
  info["cp_size"] = mb.cp_size;
  info["has_inputs"] = mb.has_inputs;
  info["has_targets"] = mb.has_targets;
  info["cp_by_segment"] = mb.cp_by_segment;
  return info;
}

uint64_t address_of(const PythonJob& job, size_t index, const std::string& name) {
  const MicroBatch& mb = job.micro(index);
  if (name == "tokens") return reinterpret_cast<uintptr_t>(mb.tokens.data());
  if (name == "labels") return reinterpret_cast<uintptr_t>(mb.labels.data());
  if (name == "positions") return reinterpret_cast<uintptr_t>(mb.positions.data());
  if (name == "loss_mask") return reinterpret_cast<uintptr_t>(mb.loss_mask.data());
  if (name == "cu_seqlens") return reinterpret_cast<uintptr_t>(mb.cu_seqlens.data());
  if (name == "patch_positions") return reinterpret_cast<uintptr_t>(mb.patch_positions.data());
  if (name == "patches") return reinterpret_cast<uintptr_t>(mb.patches.data());
  throw Error("no batch field named " + name);
}

}  // namespace
}  // namespace msd

PYBIND11_MODULE(_msd, m) {
  using msd::PythonJob;
  m.doc() = "msd's C++ core; use the package msd (msd.Job), not this module";
  static py::exception<msd::Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<msd::ConfigError> config_error(m, "ConfigError", error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const msd::ConfigError& e) {
      config_error(e.what());
    } catch (const msd::Error& e) {
      error(e.what());
    }
  });
  py::class_<PythonJob>(m, "Job")
      .def(py::init<const std::vector<std::string>&, int64_t>(), py::arg("argv"), py::arg("comm"))
      .def_property_readonly("role", [](const PythonJob& j) { return msd::role_text(j.job().role()); })
      .def_property_readonly("world_rank", [](const PythonJob& j) { return j.job().world_rank(); })
      .def_property_readonly("client_index", [](const PythonJob& j) { return j.job().client_index(); })
      .def_property_readonly("steps", [](const PythonJob& j) { return j.config().job.steps; })
      .def_property_readonly("seed", [](const PythonJob& j) { return j.config().job.seed; })
      .def_property_readonly("world_size", [](const PythonJob& j) { return j.config().world_size(); })
      .def_property_readonly("started", [](const PythonJob& j) { return j.job().started(); })
      .def("comm", &PythonJob::comm)
      .def("start", &PythonJob::start, py::arg("resume_step") = std::nullopt)
      .def("serve", &PythonJob::serve)
      .def("next", &PythonJob::next)
      .def_property_readonly("step", [](const PythonJob& j) { return j.batch().step; })
      .def_property_readonly("digest", [](const PythonJob& j) { return j.batch().digest; })
      .def_property_readonly("global_loss_tokens", [](const PythonJob& j) { return j.batch().global_loss_tokens; })
      .def_property_readonly("micro_batches", [](const PythonJob& j) { return j.batch().micro_batches.size(); })
      .def("micro_info", &msd::micro_info)
      .def("field", &msd::field)
      .def("address", &msd::address_of)
      .def("finish", &PythonJob::finish)
      .def("end_after_takeover", &PythonJob::end_after_takeover)
      .def("close", &PythonJob::close);
  m.def("digest", &msd::digest_of, py::arg("step"), py::arg("micro_batches"));
  m.def("abort", &msd::abort_for, py::arg("kind"), py::arg("text"), py::arg("status") = 0);
  m.def("end_by_signal", [](int signal) { msd::end_by_signal(signal); }, py::arg("signal"));
}
