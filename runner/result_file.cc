#include "runner/result_file.h"

#include <array>
#include <cerrno>

#include <fcntl.h>
#include <unistd.h>

#include "contract/json_adapter.h"
#include "contract/result.h"
#include "contract/strings.h"
#include "runner/fd.h"

namespace captf::runner {

std::string encodeResultDocument(const captf::runner::v1alpha1::RunResult& result,
                                 const std::optional<OutputsReport>& outputs) {
  std::string document = contract::encodeResult(result);
  if (!outputs) {
    return document;
  }
  auto parsed = contract::parseJson(document, "result document");
  if (!parsed.ok() || !parsed->is_object()) {
    return document;
  }
  const nlohmann::json encoded_result = *std::move(parsed);
  for (const OutputsDetail detail :
       {OutputsDetail::kFull, OutputsDetail::kNoValues, OutputsDetail::kStateOnly}) {
    nlohmann::json with_outputs = encoded_result;
    with_outputs["outputs"] = outputsJson(*outputs, detail);
    auto encoded =
        contract::dumpJson(with_outputs, contract::JsonLayout::kCompact, "result document");
    if (encoded.ok() && encoded->size() <= contract::kMaxResultBytes) {
      return *std::move(encoded);
    }
  }
  return document;
}

absl::Status writeResultDocument(const std::string& path, std::string_view document) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    return absl::UnavailableError(errnoMessage(contract::strCat("opening ", path), errno));
  }
  if (!writeAll(fd.get(), document.data(), document.size())) {
    return absl::UnavailableError(errnoMessage(contract::strCat("writing ", path), errno));
  }
  if (::close(fd.release()) != 0) {
    return absl::UnavailableError(errnoMessage(contract::strCat("closing ", path), errno));
  }
  return absl::OkStatus();
}

} // namespace captf::runner
