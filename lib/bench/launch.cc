#include "bench/launch.h"

#include <sys/stat.h>

#include <sys/wait.h>
#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>

#include "common/digest.h"
#include "common/error.h"
#include "common/files.h"
#include "source/indexed/indexed_source.h"

extern char** environ;

namespace msd::bench {

std::string executable_dir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw Error("cannot find the running executable (/proc/self/exe)");
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

std::vector<std::string> mpirun_command(int ranks, const std::string& program, const std::vector<std::string>& args) {
  std::vector<std::string> command = {"mpirun", "-n", std::to_string(ranks)};
  std::string flags;
  if (const char* env = std::getenv("MSD_MPIRUN_FLAGS")) {
    flags = env;
  } else {
    flags = "--oversubscribe --mca mpi_yield_when_idle 1 --mca btl self,vader --mca osc sm,pt2pt";
    if (::geteuid() == 0) flags = "--allow-run-as-root " + flags;
  }
  std::istringstream words(flags);
  for (std::string word; words >> word;) command.push_back(word);
  command.push_back(program);
  command.insert(command.end(), args.begin(), args.end());
  return command;
}

int run_command(const std::vector<std::string>& command, const std::string& log_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> argv;
  for (const auto& word : command) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw Error(str("cannot start ", command[0], ": ", std::strerror(rc)));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) throw IoError(str("cannot create directory ", path));
}

std::string write_random_corpus(const std::string& prefix, uint64_t documents, uint32_t min_tokens, uint32_t spread,
                                uint32_t vocab, uint64_t seed) {
  const std::string idx = prefix + ".idx";
  if (file_exists(idx)) return idx;
  IndexedDatasetWriter writer(prefix, IndexedDtype::uint16);
  std::vector<int32_t> tokens;
  for (uint64_t d = 0; d < documents; ++d) {
    tokens.resize(min_tokens + splitmix64(seed) % spread);
    for (auto& t : tokens) t = static_cast<int32_t>(splitmix64(seed) % vocab);
    writer.add_document(tokens);
  }
  writer.finish();
  return idx;
}

JsonValue read_json_file(const std::string& path) {
  const auto bytes = read_file(path);
  JsonValue value;
  const JsonStatus status = parse_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), value);
  if (!status.ok) throw IoError(str(path, ": not JSON at byte ", status.offset, ": ", status.message));
  return value;
}

double json_number(const JsonValue& root, const std::string& path) {
  const JsonValue* node = &root;
  size_t start = 0;
  while (node && start <= path.size()) {
    size_t dot = path.find('.', start);
    if (dot == std::string::npos) dot = path.size();
    node = node->type == JsonType::object ? node->find(std::string_view(path).substr(start, dot - start)) : nullptr;
    start = dot + 1;
  }
  return node && node->type == JsonType::number ? node->number : std::nan("");
}

}  // namespace msd::bench
