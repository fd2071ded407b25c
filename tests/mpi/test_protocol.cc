// Protocol test over real MPI ranks: every planned sample arrives
// byte-identical at the right clients exactly once, and each step holds
// exactly the samples the mixing schedule and the sources' streams prescribe.
// Under CP, PP and TP: each rank holds exactly its zigzag slice and its
// stage's fields, reads only the bytes it uses, and TP peers hold identical
// batches. With `thd`: variable-length rows with msd's cuts and variable
// micro-batch counts, every document piece split zigzag over the CP ranks on
// its own (Transformer Engine's THD layout); every CP rank's tokens are checked
// against the whole row, and the CP peers' positions cover it exactly.
//
// Usage: test_protocol DATA_DIR [thd]  (a msd-datagen dataset), under mpiexec
// with 8 or more ranks. Each check that fails prints what differs; all ranks
// agree on the exit code.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "config/part_options.h"
#include "mpi/mpi_test.h"
#include "msd/client.h"
#include "plan/step/mix.h"
#include "source/permutation.h"
#include "source/source.h"
#include "transform/transform.h"

using namespace msd;
using test::fail;

namespace {

// Hybrid layouts for the rank counts the test runs at.
struct Layout {
  int dp, pp, cp, tp, loaders;
};
Layout layout_for(int world) {
  if (world == 8) return {2, 1, 2, 1, 3};    // 4 clients, CP slices
  if (world == 11) return {1, 2, 2, 2, 2};   // 8 clients: PP stages, CP slices, TP peers
  if (world == 12) return {2, 2, 1, 2, 3};   // 8 clients
  return {world - 3, 1, 1, 1, 2};
}

Config make_config(const std::string& data, const Layout& l, bool thd) {
  std::vector<std::string> args = {
      "test_protocol",
      "--job.steps=10",
      "--job.global_batch=24",
      "--job.seq_len=512",
      "--job.micro_batches=2",
      "--job.prefetch_steps=2",
      "--job.seed=99",
      str("--topology.dp=", l.dp),
      str("--topology.pp=", l.pp),
      str("--topology.cp=", l.cp),
      str("--topology.tp=", l.tp),
      str("--topology.loaders=", l.loaders),
      "--mix.sources=web,books,images,corpus",
      "--mix.schedule=piecewise",
      "--source.web.format=jsonl",
      str("--source.web.path=", data, "/web/*.jsonl"),
      "--source.web.weight=0:0.5, 5:0.2",
      "--source.books.format=jsonl",
      str("--source.books.path=", data, "/books/*.jsonl"),
      "--source.books.weight=0:0.1, 5:0.3",
      "--source.images.format=wds",
      str("--source.images.path=", data, "/images/*.tar"),
      "--source.images.weight=0.25",
      "--source.corpus.format=indexed",
      str("--source.corpus.path=", data, "/corpus/*.idx"),
      "--source.corpus.weight=0.15",
      str("--tokenizer.vocab=", data, "/vocab.tiktoken"),
      "--image.max_side=64",
      "--image.patch=16",
      "--loader.window_mb=8",
      "--output.log_level=warn",
  };
  if (thd)
    for (const char* option : {"--job.micro_batch_shape=varlen", "--job.cuts=balance", "--job.micro_batch_count=variable"})
      args.push_back(option);
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return parse_command_line(static_cast<int>(argv.size()), argv.data()).config;
}

// Reads and transforms samples locally, independently of the job.
class LocalSamples {
 public:
  explicit LocalSamples(const Config& config) : config_(config) {
    for (const auto& s : config.sources) sources_.push_back(open_source(s, {config.loader.cache_dir}));
    tokenizer_ = std::make_unique<Tokenizer>(config.tokenizer.vocab,
                                             TokenizerOptions{config.tokenizer.pattern, config.tokenizer.normalize});
    transform_ = std::make_unique<SampleTransform>(tokenizer_.get(), ImageOptions{config.image.max_side, config.image.patch});
  }
  uint64_t size(uint32_t source) const { return sources_[source]->size(); }
  // nullptr for a bad sample.
  const TransformedSample* get(uint32_t source, uint64_t index) {
    auto key = std::make_pair(source, index);
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      RawSample raw;
      sources_[source]->read(index, raw);
      TransformedSample sample;
      std::string reason;
      BadKind bad = raw.bad != BadKind::none ? raw.bad : transform_->apply(raw, sample, reason);
      it = cache_.emplace(key, bad == BadKind::none ? std::make_unique<TransformedSample>(std::move(sample)) : nullptr).first;
    }
    return it->second.get();
  }

 private:
  const Config& config_;
  std::vector<std::unique_ptr<Source>> sources_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<SampleTransform> transform_;
  std::map<std::pair<uint32_t, uint64_t>, std::unique_ptr<TransformedSample>> cache_;
};

// One record per document piece a client received.
struct SpanRecord {
  uint64_t step;
  uint32_t source;
  uint64_t index;
  uint32_t begin;
  uint32_t length;
};

// The CP rank that holds whole-sequence position g under the zigzag split:
// of the sequence, or (THD) of the cu_seqlens segment holding g.
uint32_t zigzag_owner(uint64_t g, const MicroBatch& mb, uint32_t cp) {
  uint64_t begin = g / mb.seq_len * mb.seq_len, length = mb.seq_len;
  if (mb.cp_by_segment) {
    size_t s = 0;
    while (s + 2 < mb.cu_seqlens.size() && static_cast<uint64_t>(mb.cu_seqlens[s + 1]) <= g) ++s;
    begin = static_cast<uint64_t>(mb.cu_seqlens[s]);
    length = static_cast<uint64_t>(mb.cu_seqlens[s + 1]) - begin;
  }
  const uint64_t chunk = (g - begin) / (length / (2 * cp));
  return static_cast<uint32_t>(chunk < cp ? chunk : 2 * cp - 1 - chunk);
}

// Checks every position the rank holds against the sample read locally, and
// that the rank holds exactly its zigzag positions and its stage's fields.
// Returns the document positions it holds (its share of the rows).
uint64_t check_bytes(const Batch& batch, LocalSamples& local, const Config& config, const Place& place) {
  const bool thd = config.job.micro_batch_shape == RowShape::varlen && config.topology.cp > 1;
  uint64_t held_positions = 0;
  const uint32_t cp = static_cast<uint32_t>(config.topology.cp);
  const bool first = place.pp == 0, last = place.pp == config.topology.pp - 1;
  for (const MicroBatch& mb : batch.micro_batches) {
    if (mb.has_inputs != first || mb.has_targets != last || mb.cp_rank != static_cast<uint32_t>(place.cp) ||
        mb.cp_size != cp || mb.cp_by_segment != thd)
      fail("step ", batch.step, ": the batch's slice or stage fields do not match the rank's place");
    const uint64_t held = uint64_t{mb.sequences} * mb.seq_len / cp;
    if (mb.tokens.size() != (first ? held : 0) || mb.positions.size() != (first ? held : 0) ||
        mb.labels.size() != (last ? held : 0) || mb.loss_mask.size() != (last ? held : 0))
      fail("step ", batch.step, ": stage ", place.pp, " holds arrays of the wrong size");
    std::vector<uint8_t> seen(uint64_t{mb.sequences} * mb.seq_len, 0);
    for (uint64_t k = 0; k < held; ++k) {
      const uint64_t g = mb.global_position(k);
      if (g >= seen.size() || seen[g]++ || zigzag_owner(g, mb, cp) != static_cast<uint32_t>(place.cp))
        fail("step ", batch.step, ": CP rank ", place.cp, " holds position ", g, ", which is not its own");
    }
    std::map<uint64_t, size_t> patch_at;  // held position -> patch index
    for (size_t k = 0; k < mb.patch_positions.size(); ++k) patch_at[static_cast<uint64_t>(mb.patch_positions[k])] = k;
    // Held positions by whole-sequence position.
    std::map<uint64_t, uint64_t> local_of;
    for (uint64_t k = 0; k < held; ++k) local_of[mb.global_position(k)] = k;
    for (const DocSpan& doc : mb.docs) {
      const TransformedSample* sample = local.get(doc.source, doc.index);
      if (!sample) {
        fail("step ", batch.step, ": received sample ", doc.index, " of source ", doc.source, ", which is bad");
        continue;
      }
      const uint32_t patches = sample->image.patches;
      const uint64_t base = uint64_t{doc.sequence} * mb.seq_len + doc.offset;
      for (uint32_t i = 0; i < doc.length; ++i) {
        const auto it = local_of.find(base + i);
        if (it == local_of.end()) continue;  // another CP rank's position
        const uint64_t k = it->second;
        ++held_positions;
        const uint32_t pos = doc.begin + i;
        if (first && pos < patches) {
          const uint8_t* want = sample->image.pixels.data() + size_t{pos} * mb.patch_bytes;
          auto p = patch_at.find(k);
          if (p == patch_at.end() ||
              std::memcmp(mb.patches.data() + p->second * mb.patch_bytes, want, mb.patch_bytes) != 0)
            fail("step ", batch.step, ": patch ", pos, " of sample ", doc.index, " differs");
        } else if (first && mb.tokens[k] != sample->tokens.at(pos - patches)) {
          fail("step ", batch.step, ": token ", pos, " of sample ", doc.index, " of source ", doc.source, " is ",
               mb.tokens[k], ", expected ", sample->tokens[pos - patches]);
        }
        if (first && mb.positions[k] != static_cast<int32_t>(i))
          fail("step ", batch.step, ": position ", pos, " of sample ", doc.index, " is ", mb.positions[k]);
        if (last) {
          const bool labelled = pos >= patches && i + 1 < doc.length;
          const int32_t want = labelled ? sample->tokens.at(pos + 1 - patches) : kIgnoreLabel;
          if (mb.labels[k] != want || mb.loss_mask[k] != (labelled ? 1 : 0))
            fail("step ", batch.step, ": label at position ", pos, " of sample ", doc.index, " is ", mb.labels[k],
                 ", expected ", want);
        }
      }
    }
  }
  return held_positions;
}

// What the steps must contain: per step, per source, the next quota good
// samples of the source's stream.
std::vector<std::multiset<std::pair<uint32_t, uint64_t>>> expected_steps(const Config& config, LocalSamples& local) {
  Mixer mixer(make_schedule(config), config.job.global_batch);
  std::vector<uint64_t> cursor(config.sources.size(), 0);
  std::vector<std::multiset<std::pair<uint32_t, uint64_t>>> steps(config.job.steps);
  for (uint64_t t = 0; t < config.job.steps; ++t) {
    auto quota = mixer.next();
    for (uint32_t s = 0; s < quota.size(); ++s) {
      for (uint32_t taken = 0; taken < quota[s];) {
        auto pos = stream_position(config.job.seed, s, local.size(s), cursor[s]++);
        if (local.get(s, pos.index) == nullptr) continue;
        steps[t].insert({s, pos.index});
        ++taken;
      }
    }
  }
  return steps;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int world = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const bool thd = argc > 2 && std::string(argv[2]) == "thd";
  if (argc < 2 || (argc > 2 && !thd)) {
    if (rank == 0) std::fprintf(stderr, "usage: test_protocol DATA_DIR [thd]\n");
    MPI_Finalize();
    return 2;
  }
  try {
    const Config config = make_config(argv[1], layout_for(world), thd);
    Job job(config, MPI_COMM_WORLD);
    TrainerStats trainer;
    if (job.role() == Role::client) {
      LocalSamples local(config);
      std::vector<SpanRecord> spans;
      std::vector<uint64_t> digests;
      uint64_t shares[2] = {0, 0};  // document positions held, and in the whole rows
      while (const Batch* batch = job.client().next()) {
        const Place place = job.tree().place(job.client_index());
        shares[0] += check_bytes(*batch, local, config, place);
        for (const MicroBatch& mb : batch->micro_batches) shares[1] += mb.tokens_used();
        // Reads: exactly the bytes used; TP followers and middle stages none.
        const bool fetches = place.tp == 0 || config.topology.broadcast_at == msd::BroadcastAt::none;
        const bool middle = place.pp != 0 && place.pp != config.topology.pp - 1;
        if (fetches && batch->bytes_fetched != batch->bytes_needed)
          fail("step ", batch->step, ": fetched ", batch->bytes_fetched, " bytes, needed ", batch->bytes_needed);
        if ((!fetches || middle) && batch->bytes_fetched != 0)
          fail("step ", batch->step, ": a rank that uses no sample bytes of its own fetched ", batch->bytes_fetched);
        digests.push_back(batch->digest);
        for (const MicroBatch& mb : batch->micro_batches)
          for (const DocSpan& d : mb.docs) spans.push_back({batch->step, d.source, d.index, d.begin, d.length});
        ++trainer.steps;
      }
      if (digests.size() != config.job.steps) fail("client got ", digests.size(), " steps, expected ", config.job.steps);

      // Client 0 checks placement: TP peers hold identical batches, pieces
      // cover every sample exactly once, and the steps hold exactly the
      // expected samples.
      MPI_Comm clients = job.clients_comm();
      int n_clients = 0, me = 0;
      MPI_Comm_size(clients, &n_clients);
      MPI_Comm_rank(clients, &me);
      std::vector<uint64_t> all_digests(me == 0 ? digests.size() * static_cast<size_t>(n_clients) : 0);
      MPI_Gather(digests.data(), static_cast<int>(digests.size()), MPI_UINT64_T, all_digests.data(),
                 static_cast<int>(digests.size()), MPI_UINT64_T, 0, clients);
      std::vector<uint64_t> all_shares(me == 0 ? 2 * static_cast<size_t>(n_clients) : 0);
      MPI_Gather(shares, 2, MPI_UINT64_T, all_shares.data(), 2, MPI_UINT64_T, 0, clients);
      const int span_bytes = static_cast<int>(spans.size() * sizeof(SpanRecord));
      std::vector<int> counts(static_cast<size_t>(n_clients)), displs(static_cast<size_t>(n_clients), 0);
      MPI_Gather(&span_bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, clients);
      for (int c = 1; c < n_clients; ++c) displs[c] = displs[c - 1] + counts[c - 1];
      std::vector<SpanRecord> all_spans(me == 0 ? static_cast<size_t>(displs.back() + counts.back()) / sizeof(SpanRecord) : 0);
      MPI_Gatherv(spans.data(), span_bytes, MPI_BYTE, all_spans.data(), counts.data(), displs.data(), MPI_BYTE, 0, clients);
      if (me == 0) {
        const ClientPlaceTree& tree = job.tree();
        const size_t steps = config.job.steps;
        for (int c = 0; c < n_clients; ++c) {
          const int leader = tree.axis_peers(c, Axis::tp).front();
          for (size_t t = 0; t < steps; ++t)
            if (all_digests[size_t(c) * steps + t] != all_digests[size_t(leader) * steps + t])
              fail("step ", t, ": client ", c, " and its TP leader ", leader, " received different batches");
        }
        // CP peers and pipeline stages hold different parts of one batch; the
        // CP peers' positions (each checked against its sample and owned by
        // its rank alone) add up to the whole rows.
        for (int c = 0; c < n_clients; ++c) {
          const int peer = tree.axis_peers(c, Axis::cp).back();
          if (peer != c && all_digests[size_t(c) * steps] == all_digests[size_t(peer) * steps])
            fail("client ", c, " and its CP peer ", peer, " hold the same slice");
          uint64_t held = 0;
          for (int p : tree.axis_peers(c, Axis::cp)) held += all_shares[2 * size_t(p)];
          if (held != all_shares[2 * size_t(c) + 1])
            fail("client ", c, ": its CP group holds ", held, " document positions of rows holding ",
                 all_shares[2 * size_t(c) + 1]);
        }
        // Coverage from each group's first member.
        std::vector<std::map<std::pair<uint32_t, uint64_t>, std::vector<std::pair<uint32_t, uint32_t>>>> pieces(steps);
        for (int g = 0; g < tree.data_groups(); ++g) {
          const int leader = tree.group_members(g).front();
          const size_t first = size_t(displs[leader]) / sizeof(SpanRecord);
          const size_t n = size_t(counts[leader]) / sizeof(SpanRecord);
          for (size_t i = first; i < first + n; ++i) {
            const SpanRecord& r = all_spans[i];
            pieces.at(r.step)[{r.source, r.index}].push_back({r.begin, r.length});
          }
        }
        LocalSamples local0(config);
        auto expected = expected_steps(config, local0);
        for (size_t t = 0; t < steps; ++t) {
          std::multiset<std::pair<uint32_t, uint64_t>> got;
          for (auto& [key, ranges] : pieces[t]) {
            std::sort(ranges.begin(), ranges.end());
            const TransformedSample* sample = local0.get(key.first, key.second);
            if (!sample) continue;
            // A sample may repeat within a step only when its source is
            // smaller than its quota; count the sample once per full cover.
            uint32_t covered = 0, copies = 0;
            for (const auto& [begin, length] : ranges) {
              if (begin == 0 && covered != 0) {
                ++copies;
                covered = 0;
              }
              if (begin != covered) fail("step ", t, ": sample ", key.second, " of source ", key.first, " has a gap or overlap at ", covered);
              covered = begin + length;
            }
            ++copies;
            const uint32_t positions = sample->positions();
            const bool truncated_image_text = sample->image.patches > 0 && positions > config.job.seq_len;
            if (covered != positions && !truncated_image_text)
              fail("step ", t, ": sample ", key.second, " of source ", key.first, " covered to ", covered, " of ", positions);
            for (uint32_t k = 0; k < copies; ++k) got.insert(key);
          }
          if (got != expected[t])
            fail("step ", t, ": received ", got.size(), " samples, expected ", expected[t].size(),
                 " (or a different set)");
        }
        std::printf("protocol%s: %zu steps x %d clients checked (%d data groups)\n", thd ? " (THD rows)" : "", steps,
                    n_clients, tree.data_groups());
      }
    } else {
      job.serve();
    }
    job.finish(trainer);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return test::finish("protocol");
}
