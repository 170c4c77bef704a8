#include "manager/lifecycle/names.h"

#include <cassert>

#include "contract/digest.h"
#include "contract/strings.h"

namespace captf::lifecycle {

using contract::strCat;

namespace {

std::string hex16(std::string_view value) {
  return contract::sha256Hex(value).substr(0, 16);
}

} // namespace

std::string clusterLeaseName(std::string_view ns, std::string_view cluster_name) {
  return strCat("captf-cluster-", hex16(strCat(ns, "/", cluster_name)));
}

std::string jobName(const ObjectIdentity& object, const JobNameParts& parts) {
  assert(parts.attempt >= 1);
  const std::string_view op = api::enumName(parts.operation);
  const std::string hash = contract::sha256Hex(strCat(parts.inputs_hash, "\n", op, "\n",
                                                      parts.attempt, "\n", parts.tick, "\n"))
                               .substr(0, 6);
  const std::string_view kind_short = contract::roleSpec(object.role).kind_short;
  std::string name =
      strCat("captf-", kind_short, "-", object.name, "-", op, "-a", parts.attempt, "-", hash);
  if (name.size() > kMaxJobName) {
    name = strCat("captf-", kind_short, "-", hex16(object.name), "-", op, "-a", parts.attempt, "-",
                  hash);
  }
  return name;
}

} // namespace captf::lifecycle
