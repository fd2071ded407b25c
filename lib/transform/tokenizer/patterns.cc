// The named pre-tokenization patterns and the ICU-backed splitter.
//
// The regexes are tiktoken's pat_str strings, copied verbatim from the tiktoken
// npm package (1.0.22, encoders/*.json) that tools/reference/ checks against.
// They run unchanged under ICU: ICU's \s is Unicode White_Space like Rust's,
// and (?i:...) folds the same letters ('ſ' matches 's' in both).
#include <unicode/utext.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include "common/error.h"
#include "transform/tokenizer/pretokenize.h"
#include "transform/tokenizer/tokenizer.h"

namespace msd {
namespace {

struct NamedPattern {
  std::string_view name;
  std::string_view regex;
};

constexpr std::string_view kCl100k =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr std::string_view kO200k =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// r50k_base (GPT-2) and p50k_base share one pattern.
constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

constexpr std::array<NamedPattern, 9> kNamedPatterns = {{
    {"cl100k", kCl100k},
    {"cl100k_base", kCl100k},
    {"o200k", kO200k},
    {"o200k_base", kO200k},
    {"gpt2", kGpt2},
    {"r50k", kGpt2},
    {"r50k_base", kGpt2},
    {"p50k", kGpt2},
    {"p50k_base", kGpt2},
}};

}  // namespace

std::string resolve_pattern(const std::string& name_or_regex) {
  for (const auto& named : kNamedPatterns) {
    if (named.name == name_or_regex) return std::string(named.regex);
  }
  // A regex of only word characters matches just that literal text, and
  // tiktoken drops what no match covers: almost surely a mistyped name.
  const bool looks_like_name =
      !name_or_regex.empty() && std::all_of(name_or_regex.begin(), name_or_regex.end(), [](unsigned char c) {
        return std::isalnum(c) != 0 || c == '_';
      });
  if (looks_like_name) {
    throw ConfigError(str("pattern '", name_or_regex, "' is not a known name (cl100k, o200k, gpt2, r50k, p50k)"));
  }
  if (name_or_regex.empty()) throw ConfigError("the pre-tokenization pattern is empty");
  return name_or_regex;
}

namespace {

std::string resolve_for(const std::string& name_or_regex, const std::string& option) {
  try {
    return resolve_pattern(name_or_regex);
  } catch (const ConfigError& e) {
    throw ConfigError(str(option, ": ", e.what()));
  }
}

std::shared_ptr<const icu::RegexPattern> compile(const std::string& regex, const std::string& name_or_regex,
                                                 const std::string& option) {
  UErrorCode status = U_ZERO_ERROR;
  UParseError parse_error{};
  std::shared_ptr<const icu::RegexPattern> pattern(
      icu::RegexPattern::compile(icu::UnicodeString::fromUTF8(regex), 0, parse_error, status));
  if (U_FAILURE(status)) {
    throw ConfigError(str(option, ": pattern '", name_or_regex, "' is not a regex ICU compiles: ",
                          u_errorName(status), " at offset ", parse_error.offset));
  }
  return pattern;
}

}  // namespace

// A hand-written splitter never runs the regex: it is not compiled (ICU's
// compiled pattern, its Unicode sets and the library pages the compile
// touches would be held by every tokenizer for nothing).
PreTokenizer::PreTokenizer(const std::string& name_or_regex, const std::string& option, SplitEngine engine)
    : regex_(resolve_for(name_or_regex, option)),
      named_(engine == SplitEngine::automatic ? named_split_for(regex_) : NamedSplit::none),
      pattern_(named_ == NamedSplit::none ? compile(regex_, name_or_regex, option) : nullptr) {
  make_matcher(option);
}

PreTokenizer::PreTokenizer(std::string regex, NamedSplit named, std::shared_ptr<const icu::RegexPattern> pattern,
                           const std::string& option)
    : regex_(std::move(regex)), named_(named), pattern_(std::move(pattern)) {
  make_matcher(option);
}

void PreTokenizer::make_matcher(const std::string& option) {
  if (!pattern_) return;  // a hand-written splitter
  UErrorCode status = U_ZERO_ERROR;
  matcher_.reset(pattern_->matcher(status));
  if (U_FAILURE(status)) throw ConfigError(str(option, ": cannot build a matcher: ", u_errorName(status)));
  // Backtracking over long whitespace runs can be deep; allow far more than
  // ICU's default 8 MB before giving up.
  matcher_->setStackLimit(256 << 20, status);
  if (U_FAILURE(status)) throw ConfigError(str(option, ": cannot set the regex stack limit: ", u_errorName(status)));
}

PreTokenizer PreTokenizer::sharing_pattern() const {
  return PreTokenizer(regex_, named_, pattern_, "pre-tokenizer");
}

PreTokenizer::~PreTokenizer() {
  if (text_ != nullptr) utext_close(text_);
}

PreTokenizer::PreTokenizer(PreTokenizer&& other) noexcept
    : regex_(std::move(other.regex_)),
      named_(other.named_),
      pattern_(std::move(other.pattern_)),
      matcher_(std::move(other.matcher_)),
      text_(std::exchange(other.text_, nullptr)) {}

PreTokenizer& PreTokenizer::operator=(PreTokenizer&& other) noexcept {
  if (this != &other) {
    if (text_ != nullptr) utext_close(text_);
    regex_ = std::move(other.regex_);
    named_ = other.named_;
    pattern_ = std::move(other.pattern_);
    matcher_ = std::move(other.matcher_);
    text_ = std::exchange(other.text_, nullptr);
  }
  return *this;
}

void PreTokenizer::begin(std::string_view text) {
  UErrorCode status = U_ZERO_ERROR;
  // Reopening the same UText reuses its storage: no allocation per call.
  text_ = utext_openUTF8(text_, text.data(), static_cast<int64_t>(text.size()), &status);
  if (U_FAILURE(status)) throw Error(str("pre-tokenizer: cannot open the text: ", u_errorName(status)));
  matcher_->reset(text_);
}

bool PreTokenizer::next(size_t& start_bytes, size_t& end_bytes) {
  UErrorCode status = U_ZERO_ERROR;
  if (!matcher_->find(status)) {
    if (U_FAILURE(status)) throw Error(str("pre-tokenizer: regex matching failed: ", u_errorName(status)));
    return false;
  }
  // Native indices of a UTF-8 UText are byte offsets.
  start_bytes = static_cast<size_t>(matcher_->start64(status));
  end_bytes = static_cast<size_t>(matcher_->end64(status));
  if (U_FAILURE(status)) throw Error(str("pre-tokenizer: regex matching failed: ", u_errorName(status)));
  return true;
}

}  // namespace msd
