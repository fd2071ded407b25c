#include "job/source_agreement.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "common/error.h"

namespace msd {

namespace {

constexpr size_t kNamed = 3;  // files named per difference; the rest counted

// "a, b, c and 4 more", or "" for none.
std::string name_some(const std::vector<std::string>& paths) {
  std::string text;
  for (size_t i = 0; i < paths.size() && i < kNamed; ++i) text += str(i == 0 ? "" : ", ", paths[i]);
  if (paths.size() > kNamed) text += str(" and ", paths.size() - kNamed, " more");
  return text;
}

// What `other` saw that `first` did not: files only one of them has, and
// files whose sizes differ.
std::string file_difference(const std::vector<SourceFile>& first, const std::vector<SourceFile>& other) {
  std::map<std::string, uint64_t> a, b;
  for (const auto& f : first) a[f.path] = f.bytes;
  for (const auto& f : other) b[f.path] = f.bytes;
  std::vector<std::string> only_first, only_other, sized;
  for (const auto& [path, bytes] : a) {
    auto it = b.find(path);
    if (it == b.end()) only_first.push_back(path);
    else if (it->second != bytes) sized.push_back(str(path, " (", bytes, " vs ", it->second, " bytes)"));
  }
  for (const auto& [path, bytes] : b)
    if (!a.count(path)) only_other.push_back(path);
  std::string why;
  auto add = [&](const std::vector<std::string>& paths, const char* what) {
    if (!paths.empty()) why += str(why.empty() ? "" : "; ", what, ": ", name_some(paths));
  };
  add(only_first, "only the first sees");
  add(only_other, "only the second sees");
  add(sized, "sizes differ");
  return why;
}

std::string who(const LoaderHello& h) { return str("loader ", h.loader, " (world rank ", h.world_rank, ")"); }

}  // namespace

std::vector<SourceInfo> agree_on_sources(std::span<const LoaderHello> arrived, const Config& config) {
  // In loader order, not arrival order, so the same difference is always
  // told the same way.
  std::vector<const LoaderHello*> hellos;
  for (const auto& h : arrived) hellos.push_back(&h);
  std::ranges::sort(hellos, {}, [](const LoaderHello* h) { return h->world_rank; });
  std::map<uint32_t, std::pair<const LoaderHello*, const SourceInfo*>> first;
  for (const LoaderHello* hp : hellos) {
    const LoaderHello& h = *hp;
    for (const auto& info : h.hello.sources) {
      auto [it, inserted] = first.try_emplace(info.source, &h, &info);
      if (inserted) continue;
      const auto& [by, seen] = it->second;
      const std::string option = info.source < config.sources.size()
                                     ? str("source.", config.sources[info.source].name, ".path")
                                     : str("source ", info.source);
      const auto path_and_size = [](const SourceFile& f) { return std::pair<const std::string&, uint64_t>(f.path, f.bytes); };
      if (!std::ranges::equal(seen->files, info.files, {}, path_and_size, path_and_size)) {
        const std::string why = file_difference(seen->files, info.files);
        throw DataError(str(option, ": ", who(*by), " and ", who(h), " match different files (", seen->files.size(),
                            " and ", info.files.size(), "; ", why.empty() ? "in another order" : why,
                            "): every loader must read the same data; check that each node sees the same files"));
      }
      size_t differs = 0;
      while (differs < info.files.size() && seen->files[differs].samples == info.files[differs].samples) ++differs;
      if (seen->samples != info.samples || differs < info.files.size())
        throw DataError(str(option, ": ", who(*by), " counts ", seen->samples, " samples and ", who(h), " ",
                            info.samples, " in the same ", info.files.size(), " file(s)",
                            differs < info.files.size() ? str(" (", info.files[differs].path, ": ",
                                                              seen->files[differs].samples, " and ",
                                                              info.files[differs].samples, ")")
                                                        : "",
                            ": a file changed while the job started, or an index cache is stale"));
    }
  }
  std::vector<SourceInfo> infos;
  for (const auto& [source, entry] : first) infos.push_back(*entry.second);
  return infos;
}

DataFingerprint fingerprint_of_sources(std::span<const LoaderHello> hellos, const std::vector<SourceInfo>& infos) {
  // Per source, per file: the digests of it any loader took (its share's).
  std::map<uint32_t, std::map<uint32_t, std::vector<const FileDigest*>>> taken;
  for (const LoaderHello& h : hellos)
    for (const SourceInfo& info : h.hello.sources)
      for (const FileDigest& d : info.fingerprints) {
        auto& digests = taken[info.source][d.file];
        if (std::ranges::none_of(digests, [&](const FileDigest* other) { return other->path == d.path; }))
          digests.push_back(&d);
      }
  DataFingerprint data;
  for (const SourceInfo& info : infos)
    for (uint32_t f = 0; f < info.files.size(); ++f) {
      const auto& digests = taken[info.source][f];
      if (digests.empty())
        throw ProtocolError(str("start-up: no loader fingerprinted ", info.files[f].path, " (file ", f, " of source ",
                                info.source, ")"));
      // A file of an indexed source is its .idx, then its .bin; the samples
      // are the .idx's.
      for (const FileDigest* d : digests)
        data.files.push_back({info.source, d->path, d->bytes, d->digest, d->path == info.files[f].path ? info.files[f].samples : 0});
    }
  return data;
}

}  // namespace msd
