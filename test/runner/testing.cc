#include "test/runner/testing.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "test/contract/test_util.h"

namespace captf::runner::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/captf-runner-test-XXXXXX";
  const char* made = ::mkdtemp(pattern.data());
  if (made == nullptr) {
    ADD_FAILURE() << "mkdtemp failed";
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::operator/(std::string_view relative) const {
  return path_ + "/" + std::string(relative);
}

std::string testdata(std::string_view relative) {
  const char* source = std::getenv("CAPTF_SOURCE_DIR");
  const std::string path = std::string(source != nullptr ? source : ".") +
                           "/test/runner/testdata/" + std::string(relative);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "missing test data " << path;
    return {};
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

void writeText(const std::string& path, std::string_view contents, unsigned mode) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  ::chmod(path.c_str(), mode);
}

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

std::string gzip(std::string_view data) {
  return contract::testing::gzip(data);
}

std::string FakeProcessRunner::commandOf(const ProcessSpec& spec) {
  if (spec.args.empty()) {
    return {};
  }
  if (spec.args[0] == "state" && spec.args.size() > 1) {
    return "state " + spec.args[1];
  }
  return spec.args[0];
}

absl::StatusOr<ProcessResult> FakeProcessRunner::run(const ProcessSpec& spec, OutputSink& sink) {
  calls_.push_back(spec);
  const std::string command = commandOf(spec);
  FakeResponse response;
  if (const auto found = responses_.find(command); found != responses_.end()) {
    response = found->second;
  } else if (command == "version") {
    response.stdout_text = R"({"terraform_version":"1.12.6","platform":"linux_amd64"})";
  }
  if (response.side_effect) {
    response.side_effect();
  }
  if (!response.start_error.ok()) {
    return response.start_error;
  }
  // Arbitrary chunking, as a pipe would deliver it.
  const auto feed = [&sink](OutputStream stream, const std::string& text) {
    for (std::size_t at = 0; at < text.size(); at += 7) {
      sink.write(stream, std::string_view(text).substr(at, 7));
    }
  };
  feed(OutputStream::kStdout, response.stdout_text);
  feed(OutputStream::kStderr, response.stderr_text);
  ProcessResult result;
  result.exit_code = response.exit_code;
  result.stop_forwarded = response.stop_forwarded;
  result.killed = response.killed;
  result.duration = absl::Milliseconds(20);
  return result;
}

std::vector<std::string> FakeProcessRunner::commands() const {
  std::vector<std::string> out;
  out.reserve(calls_.size());
  for (const ProcessSpec& spec : calls_) {
    out.push_back(commandOf(spec));
  }
  return out;
}

const ProcessSpec* FakeProcessRunner::call(const std::string& command) const {
  for (const ProcessSpec& spec : calls_) {
    if (commandOf(spec) == command) {
      return &spec;
    }
  }
  return nullptr;
}

std::string RecordingLogWriter::all() const {
  std::string out;
  for (const auto& [stream, line] : lines) {
    out += line;
    out += '\n';
  }
  return out;
}

CapturedLog::CapturedLog()
    : log(makeLogger(LogFormat::kText, std::make_shared<spdlog::sinks::ostream_sink_st>(stream)),
          LogFormat::kText, 9) {}

} // namespace captf::runner::testing
