// Reading a tokenizer.json into hf::Model (hf_model.h says what is supported).
// Every part is checked as it is read: a part of a known kind with a setting
// this loader does not implement is refused by name, never silently dropped.
#include <algorithm>
#include <bit>
#include <cstdio>
#include <filesystem>
#include <utility>

#include "common/error.h"
#include "common/files.h"
#include "source/jsonl/json.h"
#include "transform/tokenizer/hf_model.h"
#include "transform/tokenizer/tokenizer.h"

namespace msd::hf {

void MergeTable::reserve(size_t merges) {
  const size_t count = std::bit_ceil(std::max<size_t>(16, merges * 2));
  slots_.assign(count, Slot{});
  mask_ = count - 1;
}

void MergeTable::set(int32_t left, int32_t right, Merge merge) {
  const uint64_t key = pack(left, right);
  for (uint64_t i = slot_of(key);; i = (i + 1) & mask_) {
    Slot& slot = slots_[i];
    if (slot.key == key || slot.key == kEmpty) {
      slot.key = key;
      slot.merge = merge;
      return;
    }
  }
}

void AddedTokens::add(std::string_view content, int32_t id) {
  uint32_t node = 0;
  for (const char c : content) {
    const auto byte = static_cast<unsigned char>(c);
    uint32_t child = nodes_[node].first_child;
    while (child != 0 && nodes_[child].byte != byte) child = nodes_[child].next_sibling;
    if (child == 0) {
      child = static_cast<uint32_t>(nodes_.size());
      Node fresh;
      fresh.byte = byte;
      fresh.next_sibling = nodes_[node].first_child;
      nodes_.push_back(fresh);
      nodes_[node].first_child = child;
    }
    node = child;
  }
  nodes_[node].id = id;
  first_bytes_[static_cast<unsigned char>(content[0])] = true;
}

std::pair<int32_t, size_t> AddedTokens::match_at(std::string_view text, size_t pos) const {
  std::pair<int32_t, size_t> best{kNoId, 0};
  uint32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    uint32_t child = nodes_[node].first_child;
    while (child != 0 && nodes_[child].byte != byte) child = nodes_[child].next_sibling;
    if (child == 0) break;
    node = child;
    if (nodes_[node].id != kNoId) best = {nodes_[node].id, i + 1 - pos};
  }
  return best;
}

namespace {

const char* kind_name(JsonType type) { return json_type_name(type); }

// The reading context: the file, for every message.
struct Reader {
  const std::string& path;

  [[noreturn]] void malformed(const std::string& what) const { throw IoError(str(path, ": ", what)); }
  [[noreturn]] void unsupported(const std::string& what) const {
    throw ConfigError(str(path, ": ", what, " is not supported"));
  }
  const JsonValue& member(const JsonValue& object, std::string_view name, JsonType type, const char* part) const {
    const JsonValue* value = object.type == JsonType::object ? object.find(name) : nullptr;
    if (value == nullptr) malformed(str(part, ": no \"", name, "\""));
    if (value->type != type) malformed(str(part, ": \"", name, "\" is a ", kind_name(value->type), ", not a ", kind_name(type)));
    return *value;
  }
  std::string type_of(const JsonValue& part, const char* kind) const {
    return member(part, "type", JsonType::string, kind).string;
  }
  bool flag(const JsonValue& object, std::string_view name, bool fallback) const {
    const JsonValue* value = object.find(name);
    if (value == nullptr || value->type == JsonType::null) return fallback;
    if (value->type != JsonType::boolean) malformed(str("\"", name, "\" is not true or false"));
    return value->boolean;
  }
  std::string text(const JsonValue& object, std::string_view name, const std::string& fallback) const {
    const JsonValue* value = object.find(name);
    if (value == nullptr || value->type == JsonType::null) return fallback;
    if (value->type != JsonType::string) malformed(str("\"", name, "\" is not a string"));
    return value->string;
  }
  // A Split / Replace pattern: {"String": s} or {"Regex": r}.
  std::pair<bool, std::string> pattern(const JsonValue& part, const char* kind) const {
    const JsonValue& pattern = member(part, "pattern", JsonType::object, kind);
    if (const JsonValue* s = pattern.find("String"); s != nullptr && s->type == JsonType::string) return {false, s->string};
    if (const JsonValue* r = pattern.find("Regex"); r != nullptr && r->type == JsonType::string) return {true, r->string};
    malformed(str(kind, ": \"pattern\" has neither a String nor a Regex"));
  }
};

// GPT-2's bytes_to_unicode: the printable Latin-1 bytes stand for themselves,
// the other 68 for U+0100.. in byte order. The inverse, by code point.
std::array<int16_t, 324> byte_level_inverse() {
  std::array<int16_t, 324> inverse;
  inverse.fill(-1);
  int next = 256;
  for (int byte = 0; byte < 256; ++byte) {
    const bool printable = (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || (byte >= 174);
    inverse[printable ? byte : next++] = static_cast<int16_t>(byte);
  }
  return inverse;
}

// The bytes a byte-level token string stands for; false when a character is
// outside the mapping (such a token can never come from bytes).
bool decode_byte_level(std::string_view token, std::string& out) {
  static const std::array<int16_t, 324> inverse = byte_level_inverse();
  out.clear();
  for (size_t i = 0; i < token.size();) {
    const auto lead = static_cast<unsigned char>(token[i]);
    uint32_t cp = 0;
    if (lead < 0x80) {
      cp = lead;
      i += 1;
    } else if ((lead & 0xE0) == 0xC0 && i + 1 < token.size()) {
      cp = ((lead & 0x1Fu) << 6) | (static_cast<unsigned char>(token[i + 1]) & 0x3Fu);
      i += 2;
    } else {
      return false;
    }
    if (cp >= inverse.size() || inverse[cp] < 0) return false;
    out.push_back(static_cast<char>(inverse[cp]));
  }
  return true;
}

const icu::Normalizer2* unicode_form(const std::string& type) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* form = nullptr;
  if (type == "NFC") form = icu::Normalizer2::getNFCInstance(status);
  if (type == "NFD") form = icu::Normalizer2::getNFDInstance(status);
  if (type == "NFKC") form = icu::Normalizer2::getNFKCInstance(status);
  if (type == "NFKD") form = icu::Normalizer2::getNFKDInstance(status);
  if (U_FAILURE(status)) throw ConfigError(str("ICU has no ", type, " data: ", u_errorName(status)));
  return form;
}

void read_normalizer(const Reader& reader, const JsonValue& part, Model& model) {
  if (part.type == JsonType::null) return;
  const std::string type = reader.type_of(part, "normalizer");
  if (type == "Sequence") {
    for (const JsonValue& step : reader.member(part, "normalizers", JsonType::array, "normalizer Sequence").array) {
      read_normalizer(reader, step, model);
    }
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    model.normalizations.push_back({Normalization::Kind::unicode, unicode_form(type), "", ""});
  } else if (type == "Prepend") {
    model.normalizations.push_back(
        {Normalization::Kind::prepend, nullptr, reader.member(part, "prepend", JsonType::string, "Prepend").string, ""});
  } else if (type == "Replace") {
    const auto [is_regex, pattern] = reader.pattern(part, "normalizer Replace");
    if (is_regex) reader.unsupported("normalizer Replace with a Regex pattern");
    if (pattern.empty()) reader.malformed("normalizer Replace: the pattern is empty");
    model.normalizations.push_back({Normalization::Kind::replace, nullptr, pattern,
                                    reader.member(part, "content", JsonType::string, "Replace").string});
  } else {
    reader.unsupported(str("normalizer type \"", type, "\""));
  }
}

Behavior behavior_of(const Reader& reader, const JsonValue& part) {
  const std::string name = reader.member(part, "behavior", JsonType::string, "pre_tokenizer Split").string;
  if (name == "Removed") return Behavior::removed;
  if (name == "Isolated") return Behavior::isolated;
  if (name == "MergedWithPrevious") return Behavior::merged_with_previous;
  if (name == "MergedWithNext") return Behavior::merged_with_next;
  if (name == "Contiguous") return Behavior::contiguous;
  reader.unsupported(str("Split behavior \"", name, "\""));
}

// The regex a ByteLevel pre-tokenizer splits with when use_regex is set (the
// Rust library's, which differs from tiktoken's gpt2 pat_str).
constexpr const char* kByteLevelRegex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::shared_ptr<PreTokenizer> compile_split(Model& model, const std::string& regex, size_t& slot) {
  slot = model.regex_count++;
  return std::make_shared<PreTokenizer>(regex, str(model.path, ": pre_tokenizer Split"));
}

void read_pre_tokenizer(const Reader& reader, const JsonValue& part, Model& model) {
  if (part.type == JsonType::null) return;
  const std::string type = reader.type_of(part, "pre_tokenizer");
  PreTokenization step;
  if (type == "Sequence") {
    for (const JsonValue& each : reader.member(part, "pretokenizers", JsonType::array, "pre_tokenizer Sequence").array) {
      read_pre_tokenizer(reader, each, model);
    }
    return;
  } else if (type == "Split") {
    const auto [is_regex, pattern] = reader.pattern(part, "pre_tokenizer Split");
    step.kind = is_regex ? PreTokenization::Kind::split_regex : PreTokenization::Kind::split_string;
    step.behavior = behavior_of(reader, part);
    step.invert = reader.flag(part, "invert", false);
    if (is_regex) step.regex = compile_split(model, pattern, step.regex_slot);
    if (!is_regex && pattern.empty()) reader.malformed("pre_tokenizer Split: the pattern is empty");
    step.literal = pattern;
  } else if (type == "ByteLevel") {
    step.kind = PreTokenization::Kind::byte_level;
    step.add_prefix_space = reader.flag(part, "add_prefix_space", true);
    if (reader.flag(part, "use_regex", true)) step.regex = compile_split(model, kByteLevelRegex, step.regex_slot);
    model.byte_level = true;
  } else if (type == "Metaspace") {
    step.kind = PreTokenization::Kind::metaspace;
    step.literal = reader.text(part, "replacement", "\u2581");
    if (step.literal.empty()) reader.malformed("pre_tokenizer Metaspace: the replacement is empty");
    step.split = reader.flag(part, "split", true);
    const std::string scheme = reader.text(part, "prepend_scheme", reader.flag(part, "add_prefix_space", true) ? "always" : "never");
    if (scheme == "always") step.prepend = PreTokenization::Prepend::always;
    else if (scheme == "first") step.prepend = PreTokenization::Prepend::first;
    else if (scheme == "never") step.prepend = PreTokenization::Prepend::never;
    else reader.unsupported(str("Metaspace prepend_scheme \"", scheme, "\""));
  } else if (type == "Digits") {
    step.kind = PreTokenization::Kind::digits;
    step.individual_digits = reader.flag(part, "individual_digits", false);
  } else {
    reader.unsupported(str("pre_tokenizer type \"", type, "\""));
  }
  model.pre_tokenizations.push_back(std::move(step));
}

// One template's special tokens before and after sequence A.
void read_template(const Reader& reader, const JsonValue& part, Model& model) {
  const JsonValue& specials = reader.member(part, "special_tokens", JsonType::object, "TemplateProcessing");
  bool after = false;
  for (const JsonValue& item : reader.member(part, "single", JsonType::array, "TemplateProcessing").array) {
    if (const JsonValue* sequence = item.find("Sequence"); sequence != nullptr) {
      if (after) reader.unsupported("a TemplateProcessing single template with two sequences");
      after = true;
      continue;
    }
    const JsonValue& special = reader.member(item, "SpecialToken", JsonType::object, "TemplateProcessing single");
    const std::string& name = reader.member(special, "id", JsonType::string, "TemplateProcessing SpecialToken").string;
    const JsonValue* entry = specials.find(name);
    if (entry == nullptr) reader.malformed(str("TemplateProcessing: special token \"", name, "\" is not in special_tokens"));
    for (const JsonValue& id : reader.member(*entry, "ids", JsonType::array, "TemplateProcessing special_tokens").array) {
      if (id.type != JsonType::number) reader.malformed(str("TemplateProcessing: an id of \"", name, "\" is not a number"));
      (after ? model.suffix_ids : model.prefix_ids).push_back(static_cast<int32_t>(id.number));
    }
  }
}

void read_post_processor(const Reader& reader, const JsonValue& part, Model& model) {
  if (part.type == JsonType::null) return;
  const std::string type = reader.type_of(part, "post_processor");
  if (type == "Sequence") {
    for (const JsonValue& each : reader.member(part, "processors", JsonType::array, "post_processor Sequence").array) {
      read_post_processor(reader, each, model);
    }
  } else if (type == "TemplateProcessing") {
    read_template(reader, part, model);
  } else if (type != "ByteLevel") {  // ByteLevel post-processing only moves offsets
    reader.unsupported(str("post_processor type \"", type, "\""));
  }
}

void set_token(Model& model, int32_t id, std::string bytes) {
  if (static_cast<size_t>(id) >= model.token_bytes.size()) {
    model.token_bytes.resize(size_t(id) + 1);
    model.has_token.resize(size_t(id) + 1, false);
  }
  model.token_bytes[id] = std::move(bytes);
  model.has_token[id] = true;
}

// The vocabulary and the merges. `by_text` maps each token's string as the
// file spells it to its id, for the merges.
void read_bpe(const Reader& reader, const JsonValue& bpe, Model& model) {
  const std::string type = reader.text(bpe, "type", "BPE");
  if (type != "BPE") reader.unsupported(str("model type \"", type, "\""));
  if (const JsonValue* dropout = bpe.find("dropout"); dropout != nullptr && dropout->type == JsonType::number &&
                                                       dropout->number != 0.0) {
    reader.unsupported("BPE dropout");
  }
  if (!reader.text(bpe, "continuing_subword_prefix", "").empty()) reader.unsupported("BPE continuing_subword_prefix");
  if (!reader.text(bpe, "end_of_word_suffix", "").empty()) reader.unsupported("BPE end_of_word_suffix");
  model.byte_fallback = reader.flag(bpe, "byte_fallback", false);
  model.ignore_merges = reader.flag(bpe, "ignore_merges", false);
  model.fuse_unk = reader.flag(bpe, "fuse_unk", false);

  const JsonValue& vocab = reader.member(bpe, "vocab", JsonType::object, "model");
  std::unordered_map<std::string_view, int32_t> by_text;
  by_text.reserve(vocab.object.size());
  model.vocab.reserve(vocab.object.size());
  std::string bytes;
  for (const auto& [token, value] : vocab.object) {
    if (value.type != JsonType::number || value.number < 0 || value.number > 2147483646.0 ||
        value.number != static_cast<double>(static_cast<int32_t>(value.number))) {
      reader.malformed(str("model vocab: the id of \"", token, "\" is not an integer in 0..2^31-2"));
    }
    const auto id = static_cast<int32_t>(value.number);
    by_text[token] = id;
    if (!model.byte_level) {
      bytes = token;
    } else if (!decode_byte_level(token, bytes)) {
      set_token(model, id, token);  // unreachable from bytes: decoded as written
      continue;
    }
    model.vocab[bytes] = id;
    set_token(model, id, bytes);
  }
  const std::string unk = reader.text(bpe, "unk_token", "");
  if (!unk.empty()) {
    const auto it = by_text.find(unk);
    if (it == by_text.end()) reader.malformed(str("model: unk_token \"", unk, "\" is not in the vocabulary"));
    model.unk_id = it->second;
  }

  const JsonValue& merges = reader.member(bpe, "merges", JsonType::array, "model");
  model.merges.reserve(merges.array.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.array.size(); ++rank) {
    const JsonValue& merge = merges.array[rank];
    std::string_view left, right;
    if (merge.type == JsonType::string && merge.string.find(' ') != std::string::npos) {
      const size_t space = merge.string.find(' ');
      left = std::string_view(merge.string).substr(0, space);
      right = std::string_view(merge.string).substr(space + 1);
    } else if (merge.type == JsonType::array && merge.array.size() == 2 && merge.array[0].type == JsonType::string &&
               merge.array[1].type == JsonType::string) {
      left = merge.array[0].string;
      right = merge.array[1].string;
    } else {
      reader.malformed(str("model merges[", rank, "] is neither \"a b\" nor [\"a\", \"b\"]"));
    }
    joined.assign(left).append(right);
    const auto a = by_text.find(left), b = by_text.find(right), ab = by_text.find(joined);
    if (a == by_text.end() || b == by_text.end() || ab == by_text.end()) {
      reader.malformed(str("model merges[", rank, "]: \"", left, "\" + \"", right, "\" is not in the vocabulary"));
    }
    model.merges.set(a->second, b->second, {static_cast<uint32_t>(rank), ab->second});
  }
}

void read_added_tokens(const Reader& reader, const JsonValue& root, Model& model) {
  const JsonValue* added = root.find("added_tokens");
  if (added == nullptr || added->type == JsonType::null) return;
  if (added->type != JsonType::array) reader.malformed("\"added_tokens\" is not an array");
  for (const JsonValue& token : added->array) {
    const std::string& content = reader.member(token, "content", JsonType::string, "added_tokens").string;
    const double number = reader.member(token, "id", JsonType::number, "added_tokens").number;
    if (number < 0 || number > 2147483646.0) reader.malformed(str("added token \"", content, "\": bad id"));
    if (content.empty()) reader.malformed("added_tokens: a token has no content");
    for (const char* option : {"single_word", "lstrip", "rstrip"}) {
      if (reader.flag(token, option, false)) reader.unsupported(str("added token \"", content, "\" with ", option));
    }
    const auto id = static_cast<int32_t>(number);
    (reader.flag(token, "normalized", false) ? model.normalized_added : model.raw_added).add(content, id);
    set_token(model, id, content);
  }
}

// The end-of-document token: options.eod_token, else tokenizer_config.json's
// eos_token (a string, or an AddedToken object with "content").
int32_t find_eod(const Reader& reader, const JsonValue& root, const HfTokenizerOptions& options) {
  std::string content = options.eod_token;
  if (content.empty()) {
    const auto config_path = std::filesystem::path(reader.path).parent_path() / "tokenizer_config.json";
    if (!std::filesystem::exists(config_path)) {
      throw ConfigError(str("tokenizer.append_eod: no tokenizer.eod_token given and no ", config_path.string(),
                            " to take its eos_token from"));
    }
    const std::vector<unsigned char> bytes = read_file(config_path.string());
    JsonValue config;
    const JsonStatus status = parse_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), config);
    if (!status.ok) throw IoError(str(config_path.string(), ": not JSON at byte ", status.offset, ": ", status.message));
    const JsonValue* eos = config.type == JsonType::object ? config.find("eos_token") : nullptr;
    if (eos != nullptr && eos->type == JsonType::object) eos = eos->find("content");
    if (eos == nullptr || eos->type != JsonType::string) {
      throw ConfigError(str("tokenizer.append_eod: ", config_path.string(), " has no eos_token; set tokenizer.eod_token"));
    }
    content = eos->string;
  }
  if (const JsonValue* added = root.find("added_tokens"); added != nullptr && added->type == JsonType::array) {
    for (const JsonValue& token : added->array) {
      const JsonValue* text = token.find("content");
      const JsonValue* id = token.find("id");
      if (text != nullptr && id != nullptr && text->string == content) return static_cast<int32_t>(id->number);
    }
  }
  throw ConfigError(str("tokenizer.eod_token: \"", content, "\" is not an added token of ", reader.path));
}

void find_byte_ids(const Reader& reader, Model& model) {
  model.byte_ids.fill(kNoId);
  for (int byte = 0; byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", byte);
    const std::string key = model.byte_level ? std::string(1, static_cast<char>(byte)) : std::string(name);
    const auto it = model.vocab.find(key);
    if (it != model.vocab.end()) {
      model.byte_ids[byte] = it->second;
      model.token_bytes[it->second] = std::string(1, static_cast<char>(byte));  // decodes to the byte
    } else if (model.byte_level) {
      reader.malformed(str("a byte-level vocabulary has no token for the byte ", byte));
    }
  }
}

}  // namespace

Model load(const std::string& path, const HfTokenizerOptions& options) {
  const std::vector<unsigned char> bytes = read_file(path);
  JsonValue root;
  const JsonStatus status = parse_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), root);
  if (!status.ok) throw IoError(str(path, ": not JSON at byte ", status.offset, ": ", status.message));
  const Reader reader{path};
  if (root.type != JsonType::object) reader.malformed("not a JSON object");
  Model model;
  model.path = path;
  auto part = [&](const char* name) -> const JsonValue& {
    static const JsonValue null_value;
    const JsonValue* value = root.find(name);
    return value == nullptr ? null_value : *value;
  };
  // The pre-tokenizer first: a ByteLevel step decides how the vocabulary is read.
  read_pre_tokenizer(reader, part("pre_tokenizer"), model);
  read_normalizer(reader, part("normalizer"), model);
  read_bpe(reader, reader.member(root, "model", JsonType::object, "tokenizer.json"), model);
  read_added_tokens(reader, root, model);
  read_post_processor(reader, part("post_processor"), model);
  find_byte_ids(reader, model);
  if (options.append_eod) model.eod_id = find_eod(reader, root, options);
  for (const int32_t id : model.prefix_ids) {
    if (id < 0 || static_cast<size_t>(id) >= model.has_token.size() || !model.has_token[id]) {
      reader.malformed(str("post_processor: id ", id, " is not in the vocabulary"));
    }
  }
  uint64_t token_bytes = 0;
  for (const std::string& token : model.token_bytes) token_bytes += sizeof(std::string) + token.capacity();
  // The hash table's nodes: key string, id, next pointer and bucket slot each.
  model.table_bytes = token_bytes * 2 + model.vocab.size() * 16 + model.merges.bytes();
  return model;
}

}  // namespace msd::hf
