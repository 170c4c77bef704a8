#include "contract/state.h"

#include <charconv>
#include <cstddef>
#include <functional>
#include <istream>
#include <limits>
#include <map>
#include <optional>
#include <streambuf>
#include <utility>
#include <vector>

#include <zlib.h>

#include "contract/json_adapter.h"
#include "contract/json_error.h"
#include "contract/status_macros.h"
#include "contract/strings.h"

namespace captf::contract {
namespace {

constexpr std::string_view kPartInfix = "-part-";

absl::Status inconsistent(std::string_view detail) {
  return absl::FailedPreconditionError(strCat("state chunks: ", detail));
}

absl::Status corrupt(std::string_view detail) {
  return absl::DataLossError(strCat("state: ", detail));
}

// "<base>-part-<n>" → n; nullopt when `name` is not of that form.
std::optional<std::size_t> partIndex(std::string_view base_name, std::string_view name) {
  if (!name.starts_with(base_name)) {
    return std::nullopt;
  }
  std::string_view rest = name.substr(base_name.size());
  if (!rest.starts_with(kPartInfix)) {
    return std::nullopt;
  }
  rest.remove_prefix(kPartInfix.size());
  if (rest.empty() || rest.front() == '0') {
    return std::nullopt;
  }
  std::size_t index = 0;
  const auto parsed = std::from_chars(rest.data(), rest.data() + rest.size(), index);
  if (parsed.ec != std::errc() || parsed.ptr != rest.data() + rest.size()) {
    return std::nullopt;
  }
  return index;
}

} // namespace

StateProblem stateProblem(const absl::Status& status) {
  switch (status.code()) {
  case absl::StatusCode::kFailedPrecondition:
    return StateProblem::kInconsistent;
  case absl::StatusCode::kUnimplemented:
    return StateProblem::kEncrypted;
  case absl::StatusCode::kDataLoss:
    return StateProblem::kCorrupt;
  default:
    return StateProblem::kNone;
  }
}

absl::StatusOr<std::vector<std::string>> orderChunks(std::string_view base_name,
                                                     std::vector<NamedChunk> chunks) {
  if (chunks.empty()) {
    return inconsistent("no chunk");
  }
  if (chunks.size() > kMaxStateChunks) {
    return inconsistent(strCat(chunks.size(), " chunks, over the limit of ", kMaxStateChunks));
  }
  std::map<std::size_t, std::string*> by_index;
  for (NamedChunk& chunk : chunks) {
    std::optional<std::size_t> index;
    if (chunk.name == base_name) {
      index = 0;
    } else {
      index = partIndex(base_name, chunk.name);
    }
    if (!index) {
      return inconsistent(strCat("Secret ", chunk.name, " is not a chunk of ", base_name));
    }
    if (!by_index.emplace(*index, &chunk.data).second) {
      return inconsistent(strCat("chunk ", *index, " appears twice"));
    }
  }
  std::vector<std::string> ordered;
  ordered.reserve(by_index.size());
  std::size_t expected = 0;
  for (auto& [index, data] : by_index) {
    if (index != expected) {
      return inconsistent(strCat("chunk ", expected, " is missing (have ", by_index.size(),
                                 " chunks up to ", by_index.rbegin()->first, ")"));
    }
    ordered.push_back(std::move(*data));
    ++expected;
  }
  return ordered;
}

namespace {

// The state JSON, gunzipped from the ordered chunks one piece at a time, so
// that neither the caller nor this class holds more of it than one buffer.
// Stops at the first problem (status()): a stream that is not gzip, data
// after its end, a truncated stream, more than `max_bytes`.
class Gunzip {
public:
  Gunzip(std::span<const std::string> chunks, std::size_t max_bytes)
      : chunks_(chunks), max_bytes_(max_bytes) {
    // 15 window bits + 16: gzip framing only.
    if (inflateInit2(&stream_, 15 + 16) != Z_OK) {
      status_ = absl::InternalError("zlib: inflateInit2 failed");
      done_ = true;
      return;
    }
    initialized_ = true;
  }
  ~Gunzip() {
    if (initialized_) {
      inflateEnd(&stream_);
    }
  }
  Gunzip(const Gunzip&) = delete;
  Gunzip& operator=(const Gunzip&) = delete;
  Gunzip(Gunzip&&) = delete;
  Gunzip& operator=(Gunzip&&) = delete;

  // The next piece of JSON, valid until the next call; empty at the end of
  // the stream and after a problem.
  std::span<char> next() {
    while (!done_) {
      if (stream_.avail_in == 0 && !pending_) {
        nextChunk();
        continue;
      }
      if (ended_) {
        return stop(
            corrupt(strCat("data after the end of the gzip stream (chunk ", index_ - 1, ")")));
      }
      stream_.next_out = reinterpret_cast<Bytef*>(buffer_.data());
      stream_.avail_out = static_cast<uInt>(buffer_.size());
      const uInt had_in = stream_.avail_in;
      const int rc = inflate(&stream_, Z_NO_FLUSH);
      const std::size_t produced = buffer_.size() - stream_.avail_out;
      // A full buffer may leave output inside zlib even when the input is
      // used up: call again before moving on.
      pending_ = stream_.avail_out == 0;
      if (rc == Z_STREAM_END) {
        ended_ = true;
        pending_ = false;
      } else if (rc == Z_BUF_ERROR && produced == 0 && had_in == 0) {
        // Nothing was pending after all.
        continue;
      } else if (rc != Z_OK || (produced == 0 && stream_.avail_in == had_in)) {
        // No progress with input and room for output is no gzip either.
        return stop(corrupt(strCat("not a gzip stream (",
                                   stream_.msg != nullptr ? stream_.msg : "zlib error", ", chunk ",
                                   index_ - 1, ")")));
      }
      if (produced > max_bytes_ - total_) {
        return stop(corrupt(strCat("decompresses to more than ", max_bytes_, " bytes")));
      }
      total_ += produced;
      if (produced > 0) {
        return {buffer_.data(), produced};
      }
    }
    return {};
  }

  // OK while and after a clean stream.
  const absl::Status& status() const { return status_; }

private:
  // Feeds the next chunk (which may be empty); at the end, done_.
  void nextChunk() {
    if (index_ == chunks_.size()) {
      if (!ended_) {
        stop(corrupt(strCat("the gzip stream is truncated (", compressed_, " compressed bytes in ",
                            chunks_.size(), " chunks)")));
      }
      done_ = true;
      return;
    }
    const std::string& chunk = chunks_[index_++];
    compressed_ += chunk.size();
    // zlib's next_in is not const-qualified.
    stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(chunk.data()));
    stream_.avail_in = static_cast<uInt>(chunk.size());
  }

  std::span<char> stop(absl::Status status) {
    status_ = std::move(status);
    done_ = true;
    return {};
  }

  std::span<const std::string> chunks_;
  std::size_t max_bytes_;
  z_stream stream_{};
  bool initialized_ = false;
  // The next chunk to feed.
  std::size_t index_ = 0;
  std::size_t compressed_ = 0;
  std::size_t total_ = 0;
  bool pending_ = false;
  bool ended_ = false;
  bool done_ = false;
  absl::Status status_;
  std::string buffer_ = std::string(std::size_t{256} * 1024, '\0');
};

// nlohmann's lexer keeps every byte it reads from the start of a string,
// number or literal until the start of the next one: the token and the
// whitespace and punctuation after it. TokenLimits bounds both parts
// (kMaxStateTokenBytes, kMaxStateGapBytes) by a pass over the bytes before
// the lexer gets them, following strings and their escapes.
class TokenLimits {
public:
  explicit TokenLimits(const StateLimits& limits) : limits_(limits) {}

  // How many bytes of `piece` are within the limits: all of them, or those
  // before the byte that breaks one (and status() says which).
  std::size_t scan(std::span<const char> piece) {
    for (std::size_t i = 0; i < piece.size(); ++i) {
      const Broken broken = step(piece[i]);
      if (broken != Broken::kNone) {
        status_ = corrupt(strCat(
            broken == Broken::kToken
                ? strCat("a string, number or literal longer than ", limits_.token_bytes, " bytes")
                : strCat("more than ", limits_.gap_bytes, " bytes of whitespace and punctuation"),
            " at byte ", offset_ + i + 1));
        offset_ += i;
        return i;
      }
    }
    offset_ += piece.size();
    return piece.size();
  }

  // OK unless a limit was broken.
  const absl::Status& status() const { return status_; }

private:
  enum class Broken { kNone, kToken, kGap };

  Broken step(char c) {
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      return ++token_ <= limits_.token_bytes ? Broken::kNone : Broken::kToken;
    }
    switch (c) {
    case '"':
      in_string_ = true;
      in_scalar_ = false;
      token_ = 1;
      gap_ = 0;
      return Broken::kNone;
    case ' ':
    case '\t':
    case '\n':
    case '\r':
    case '{':
    case '}':
    case '[':
    case ']':
    case ',':
    case ':':
      in_scalar_ = false;
      return ++gap_ <= limits_.gap_bytes ? Broken::kNone : Broken::kGap;
    default:
      // A number or a literal (or bytes the lexer will reject).
      if (!in_scalar_) {
        in_scalar_ = true;
        token_ = 0;
        gap_ = 0;
      }
      return ++token_ <= limits_.token_bytes ? Broken::kNone : Broken::kToken;
    }
  }

  const StateLimits& limits_;
  bool in_string_ = false;
  bool escaped_ = false;
  bool in_scalar_ = false;
  std::size_t token_ = 0;
  std::size_t gap_ = 0;
  std::size_t offset_ = 0;
  absl::Status status_;
};

// The state JSON as a stream buffer, for the JSON reader's std::istream
// input: the pieces `next` returns (empty at the end), checked by
// TokenLimits on the way. The reader only reads the pieces.
class StateBuffer : public std::streambuf {
public:
  StateBuffer(std::function<std::span<char>()> next, const StateLimits& limits)
      : next_(std::move(next)), limits_(limits) {}

  // OK unless a token limit was broken; then the stream ended there.
  const absl::Status& status() const { return limits_.status(); }

protected:
  int_type underflow() override {
    if (!limits_.status().ok()) {
      return traits_type::eof();
    }
    const std::span<char> piece = next_();
    const std::size_t usable = limits_.scan(piece);
    if (usable == 0) {
      return traits_type::eof();
    }
    setg(piece.data(), piece.data(), piece.data() + usable);
    return traits_type::to_int_type(piece.front());
  }

private:
  std::function<std::span<char>()> next_;
  TokenLimits limits_;
};

// The top-level members the summary reads; everything else is scanned past.
enum class Member { kOther, kVersion, kSerial, kLineage, kTerraformVersion, kOutputs, kResources };

Member memberOf(std::string_view key) {
  static constexpr std::pair<std::string_view, Member> kMembers[] = {
      {"version", Member::kVersion}, {"serial", Member::kSerial},
      {"lineage", Member::kLineage}, {"terraform_version", Member::kTerraformVersion},
      {"outputs", Member::kOutputs}, {"resources", Member::kResources},
  };
  for (const auto& [name, member] : kMembers) {
    if (key == name) {
      return member;
    }
  }
  return Member::kOther;
}

// A number as the summary needs it: an integer that fits std::int64_t, or
// not one (a fraction, or too large).
using Integer = std::optional<std::int64_t>;

// Reads a StateSummary from the JSON reader's events (SAX). It keeps the
// scalars it needs, builds the outputs as values (at most
// `output_values` of them) and, for `resources`, only each resource's
// `mode`; it stops the parse at nesting deeper than `depth`, at a root that
// is not an object, and at the first syntax error. Problems that do not stop it are kept and judged
// at the end, in the order the summary has always checked them. Duplicate keys keep the last value,
// as a parsed tree would.
class SummaryReader final : public nlohmann::json_sax<nlohmann::json> {
public:
  explicit SummaryReader(const StateLimits& limits) : limits_(limits) {}

  // NOLINTBEGIN(readability-identifier-naming): nlohmann's SAX interface.
  bool null() override { return inOutputs() ? keep(nullptr) : scalar(Kind::kNullToken); }
  bool boolean(bool value) override {
    return inOutputs() ? keep(value) : scalar(Kind::kOtherToken);
  }
  bool number_integer(number_integer_t value) override {
    return inOutputs() ? keep(value) : scalar(Kind::kIntegerToken, value);
  }
  bool number_unsigned(number_unsigned_t value) override {
    if (inOutputs()) {
      return keep(value);
    }
    if (value > static_cast<number_unsigned_t>(std::numeric_limits<std::int64_t>::max())) {
      return scalar(Kind::kOtherToken);
    }
    return scalar(Kind::kIntegerToken, static_cast<std::int64_t>(value));
  }
  bool number_float(number_float_t value, const string_t& /*text*/) override {
    return inOutputs() ? keep(value) : scalar(Kind::kOtherToken);
  }
  bool string(string_t& value) override {
    return inOutputs() ? keep(std::move(value)) : scalar(Kind::kStringToken, 0, &value);
  }
  bool binary(binary_t& /*value*/) override {
    // The JSON reader never produces one.
    return fail(corrupt("a binary value"));
  }
  bool start_object(std::size_t /*elements*/) override { return open(Container::kObject); }
  bool key(string_t& key) override {
    switch (frames_.back()) {
    case Frame::kRoot:
      rootKey(key);
      break;
    case Frame::kOutputs:
      output_key_ = std::move(key);
      break;
    case Frame::kResource:
      reading_mode_ = key == "mode";
      break;
    case Frame::kResources:
    case Frame::kSkip:
      break;
    }
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t /*elements*/) override { return open(Container::kArray); }
  bool end_array() override { return close(); }
  // `last_token` is state content: never used.
  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::json::exception& error) override {
    return fail(corrupt(jsonErrorText(position, error)));
  }
  // NOLINTEND(readability-identifier-naming)

  // The verdict once the parse is over; `parsed` is what the parse returned.
  absl::StatusOr<StateSummary> finish(bool parsed) {
    if (!error_.ok()) {
      return error_;
    }
    if (!parsed) {
      // The parse stops only through fail(), which sets error_.
      return corrupt("invalid JSON");
    }
    if (!version_seen_) {
      if (encrypted_) {
        return absl::UnimplementedError(
            "state: encrypted by OpenTofu client-side state encryption, which is not supported");
      }
      return corrupt("no version field");
    }
    if (!version_) {
      return corrupt(
          strCat("unsupported state version: not an integer (want ", kSupportedStateVersion, ")"));
    }
    if (*version_ != kSupportedStateVersion) {
      return corrupt(
          strCat("unsupported state version ", *version_, " (want ", kSupportedStateVersion, ")"));
    }
    if (!serial_ || *serial_ < 0) {
      return corrupt("serial is missing or not a non-negative integer");
    }
    if (!lineage_) {
      return corrupt("lineage is missing or not a string");
    }
    if (!outputs_problem_.empty()) {
      return corrupt(outputs_problem_);
    }
    if (!resources_problem_.empty()) {
      return corrupt(resources_problem_);
    }
    StateSummary summary;
    summary.version = kSupportedStateVersion;
    summary.serial = *serial_;
    summary.lineage = *std::move(lineage_);
    summary.terraform_version = std::move(terraform_version_);
    summary.managed_resources = managed_resources_;
    summary.outputs = std::move(outputs_);
    return summary;
  }

private:
  enum class Container { kObject, kArray };
  // What an open container is to the reader.
  enum class Frame {
    kRoot,      // the state object
    kOutputs,   // `outputs` or a container inside it: kept as values
    kResources, // the `resources` list
    kResource,  // one resource: only its `mode` is read
    kSkip,      // anything else: scanned past
  };
  // What the reader needs to know of a scalar outside the outputs.
  enum class Kind { kNullToken, kIntegerToken, kStringToken, kOtherToken };

  void rootKey(const string_t& key) {
    member_ = memberOf(key);
    // A later duplicate replaces what an earlier one said.
    switch (member_) {
    case Member::kVersion:
      version_seen_ = true;
      version_.reset();
      break;
    case Member::kSerial:
      serial_.reset();
      break;
    case Member::kLineage:
      lineage_.reset();
      break;
    case Member::kTerraformVersion:
      terraform_version_.clear();
      break;
    case Member::kOutputs:
      outputs_ = nlohmann::json::object();
      outputs_problem_.clear();
      break;
    case Member::kResources:
      managed_resources_ = 0;
      resources_problem_.clear();
      break;
    case Member::kOther:
      if (key == "encrypted_data") {
        encrypted_ = true;
      }
      break;
    }
  }

  bool inOutputs() const { return !frames_.empty() && frames_.back() == Frame::kOutputs; }

  bool keep(nlohmann::json value) { return keepOutput(std::move(value)) != nullptr; }

  // A scalar outside the outputs; `text` is set for a string.
  bool scalar(Kind kind, std::int64_t integer = 0, const string_t* text = nullptr) {
    if (frames_.empty()) {
      return fail(corrupt("not a JSON object"));
    }
    switch (frames_.back()) {
    case Frame::kRoot:
      rootScalar(kind, integer, text);
      break;
    case Frame::kResources:
      if (resources_problem_.empty()) {
        resources_problem_ = "a resource is not an object";
      }
      break;
    case Frame::kResource:
      if (reading_mode_) {
        managed_ = kind == Kind::kStringToken && *text == "managed";
      }
      break;
    case Frame::kOutputs:
    case Frame::kSkip:
      break;
    }
    return true;
  }

  void rootScalar(Kind kind, std::int64_t integer, const string_t* text) {
    switch (member_) {
    case Member::kVersion:
      if (kind == Kind::kIntegerToken) {
        version_ = integer;
      }
      break;
    case Member::kSerial:
      if (kind == Kind::kIntegerToken) {
        serial_ = integer;
      }
      break;
    case Member::kLineage:
      if (kind == Kind::kStringToken) {
        lineage_ = *text;
      }
      break;
    case Member::kTerraformVersion:
      if (kind == Kind::kStringToken) {
        terraform_version_ = *text;
      }
      break;
    case Member::kOutputs:
      if (kind != Kind::kNullToken) {
        outputs_problem_ = "outputs is not an object";
      }
      break;
    case Member::kResources:
      if (kind != Kind::kNullToken) {
        resources_problem_ = "resources is not a list";
      }
      break;
    case Member::kOther:
      break;
    }
  }

  bool open(Container container) {
    if (frames_.size() >= limits_.depth) {
      return fail(corrupt(strCat("nested deeper than ", limits_.depth, " levels")));
    }
    const bool object = container == Container::kObject;
    if (frames_.empty()) {
      if (!object) {
        return fail(corrupt("not a JSON object"));
      }
      frames_.push_back(Frame::kRoot);
      return true;
    }
    Frame frame = Frame::kSkip;
    switch (frames_.back()) {
    case Frame::kRoot:
      frame = openMember(object);
      break;
    case Frame::kOutputs: {
      nlohmann::json* kept =
          keepOutput(object ? nlohmann::json::object() : nlohmann::json::array());
      if (kept == nullptr) {
        return false;
      }
      outputs_stack_.push_back(kept);
      frame = Frame::kOutputs;
      break;
    }
    case Frame::kResources:
      if (object) {
        managed_ = false;
        reading_mode_ = false;
        frame = Frame::kResource;
      } else if (resources_problem_.empty()) {
        resources_problem_ = "a resource is not an object";
      }
      break;
    case Frame::kResource:
      if (reading_mode_) {
        managed_ = false;
      }
      break;
    case Frame::kSkip:
      break;
    }
    if (!error_.ok()) {
      // Over the outputs budget.
      return false;
    }
    frames_.push_back(frame);
    return true;
  }

  // A container as the value of a root member.
  Frame openMember(bool object) {
    switch (member_) {
    case Member::kOutputs:
      if (!object) {
        outputs_problem_ = "outputs is not an object";
        return Frame::kSkip;
      }
      if (countOutput()) {
        outputs_stack_.push_back(&outputs_);
        return Frame::kOutputs;
      }
      return Frame::kSkip;
    case Member::kResources:
      if (object) {
        resources_problem_ = "resources is not a list";
        return Frame::kSkip;
      }
      return Frame::kResources;
    case Member::kVersion:
    case Member::kSerial:
    case Member::kLineage:
    case Member::kTerraformVersion:
    case Member::kOther:
      // A container where a scalar belongs leaves the member unset.
      return Frame::kSkip;
    }
    return Frame::kSkip;
  }

  bool close() {
    const Frame frame = frames_.back();
    frames_.pop_back();
    if (frame == Frame::kOutputs) {
      outputs_stack_.pop_back();
    } else if (frame == Frame::kResource && managed_) {
      ++managed_resources_;
    }
    return true;
  }

  // Counts one more output value against the budget.
  bool countOutput() {
    if (++output_values_ > limits_.output_values) {
      fail(corrupt(strCat("outputs hold more than ", limits_.output_values, " values")));
      return false;
    }
    return true;
  }

  // Stores `value` in the output container being read; where it now lives,
  // or null when over the budget.
  nlohmann::json* keepOutput(nlohmann::json value) {
    if (!countOutput()) {
      return nullptr;
    }
    nlohmann::json& parent = *outputs_stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    nlohmann::json& member = parent[std::move(output_key_)];
    member = std::move(value);
    return &member;
  }

  bool fail(absl::Status status) {
    if (error_.ok()) {
      error_ = std::move(status);
    }
    return false;
  }

  const StateLimits& limits_;
  std::vector<Frame> frames_;
  Member member_ = Member::kOther;
  bool version_seen_ = false;
  Integer version_;
  Integer serial_;
  std::optional<std::string> lineage_;
  std::string terraform_version_;
  bool encrypted_ = false;
  nlohmann::json outputs_ = nlohmann::json::object();
  std::vector<nlohmann::json*> outputs_stack_;
  std::string output_key_;
  std::size_t output_values_ = 0;
  std::string outputs_problem_;
  std::size_t managed_resources_ = 0;
  bool reading_mode_ = false;
  bool managed_ = false;
  std::string resources_problem_;
  absl::Status error_;
};

absl::Status checkChunkCount(std::span<const std::string> ordered_chunks) {
  if (ordered_chunks.empty()) {
    return inconsistent("no chunk");
  }
  if (ordered_chunks.size() > kMaxStateChunks) {
    return corrupt(strCat(ordered_chunks.size(), " chunks, over the limit of ", kMaxStateChunks));
  }
  return absl::OkStatus();
}

} // namespace

absl::StatusOr<std::string> assembleState(std::span<const std::string> ordered_chunks,
                                          const StateLimits& limits) {
  CAPTF_RETURN_IF_ERROR(checkChunkCount(ordered_chunks));
  Gunzip gunzip(ordered_chunks, limits.bytes);
  std::string out;
  for (std::span<char> piece = gunzip.next(); !piece.empty(); piece = gunzip.next()) {
    out.append(piece.data(), piece.size());
  }
  CAPTF_RETURN_IF_ERROR(gunzip.status());
  return out;
}

namespace {

// Reads the summary from the pieces `next` returns; `stream` is the status
// of their source, checked first: a broken stream explains the JSON error it
// caused (a truncated document).
absl::StatusOr<StateSummary> summarize(std::function<std::span<char>()> next,
                                       const absl::Status& stream, const StateLimits& limits) {
  StateBuffer buffer(std::move(next), limits);
  std::istream in(&buffer);
  SummaryReader reader(limits);
  const bool parsed = saxParseJson(in, reader);
  CAPTF_RETURN_IF_ERROR(stream);
  CAPTF_RETURN_IF_ERROR(buffer.status());
  return reader.finish(parsed);
}

} // namespace

absl::StatusOr<StateSummary> inspectState(std::string_view state_json, const StateLimits& limits) {
  bool given = false;
  // The text in one piece; std::streambuf wants char*, and only reads it.
  auto next = [&given, state_json]() -> std::span<char> {
    if (given) {
      return {};
    }
    given = true;
    return {const_cast<char*>(state_json.data()), state_json.size()};
  };
  return summarize(next, absl::OkStatus(), limits);
}

absl::StatusOr<StateSummary> summarizeState(std::span<const std::string> ordered_chunks,
                                            const StateLimits& limits) {
  CAPTF_RETURN_IF_ERROR(checkChunkCount(ordered_chunks));
  Gunzip gunzip(ordered_chunks, limits.bytes);
  return summarize([&gunzip] { return gunzip.next(); }, gunzip.status(), limits);
}

} // namespace captf::contract
