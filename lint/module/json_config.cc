#include "lint/module/json_config.h"

#include <algorithm>
#include <array>
#include <span>
#include <unordered_set>
#include <utility>

#include "contract/status_macros.h"
#include "contract/strings.h"
#include "lint/hcl/parser.h"

namespace captf::lint {

using contract::strCat;

namespace {

struct BodySchema;

struct BlockSchema {
  std::string_view type;
  int labels = 0;
  const BodySchema* body = nullptr;
};

struct BodySchema {
  std::span<const BlockSchema> blocks;
  // Arguments whose strings are expressions (references), not templates.
  std::span<const std::string_view> expression_args;
};

constexpr BodySchema kOpaque{};
constexpr auto kLifecycleExprs =
    std::to_array<std::string_view>({"ignore_changes", "replace_triggered_by"});
constexpr auto kConditionBlocks =
    std::to_array<BlockSchema>({{"precondition", 0, &kOpaque}, {"postcondition", 0, &kOpaque}});
constexpr BodySchema kLifecycle{kConditionBlocks, kLifecycleExprs};
constexpr auto kContentBlock = std::to_array<BlockSchema>({{"content", 0, &kOpaque}});
constexpr auto kDynamicExprs = std::to_array<std::string_view>({"iterator"});
constexpr BodySchema kDynamic{kContentBlock, kDynamicExprs};
constexpr auto kResourceBlocks = std::to_array<BlockSchema>({{"lifecycle", 0, &kLifecycle},
                                                             {"provisioner", 1, &kOpaque},
                                                             {"connection", 0, &kOpaque},
                                                             {"dynamic", 1, &kDynamic}});
constexpr auto kResourceExprs = std::to_array<std::string_view>({"provider", "depends_on"});
constexpr BodySchema kResource{kResourceBlocks, kResourceExprs};
constexpr auto kValidation = std::to_array<BlockSchema>({{"validation", 0, &kOpaque}});
constexpr BodySchema kVariable{kValidation, {}};
constexpr auto kPrecondition = std::to_array<BlockSchema>({{"precondition", 0, &kOpaque}});
constexpr auto kDependsOn = std::to_array<std::string_view>({"depends_on"});
constexpr BodySchema kOutput{kPrecondition, kDependsOn};
constexpr auto kModuleExprs = std::to_array<std::string_view>({"providers", "depends_on"});
constexpr BodySchema kModuleCall{{}, kModuleExprs};
constexpr auto kTerraformBlocks = std::to_array<BlockSchema>({{"required_providers", 0, &kOpaque},
                                                              {"backend", 1, &kOpaque},
                                                              {"cloud", 0, &kOpaque},
                                                              {"provider_meta", 1, &kOpaque}});
constexpr BodySchema kTerraform{kTerraformBlocks, {}};
constexpr auto kCheckBlocks =
    std::to_array<BlockSchema>({{"data", 2, &kResource}, {"assert", 0, &kOpaque}});
constexpr BodySchema kCheck{kCheckBlocks, {}};
constexpr auto kMovedExprs = std::to_array<std::string_view>({"from", "to"});
constexpr BodySchema kMoved{{}, kMovedExprs};
constexpr auto kRootBlocks = std::to_array<BlockSchema>({{"terraform", 0, &kTerraform},
                                                         {"variable", 1, &kVariable},
                                                         {"output", 1, &kOutput},
                                                         {"locals", 0, &kOpaque},
                                                         {"provider", 1, &kOpaque},
                                                         {"resource", 2, &kResource},
                                                         {"data", 2, &kResource},
                                                         {"ephemeral", 2, &kResource},
                                                         {"module", 1, &kModuleCall},
                                                         {"check", 1, &kCheck},
                                                         {"moved", 0, &kMoved},
                                                         {"import", 0, &kMoved},
                                                         {"removed", 0, &kMoved}});

class Converter {
public:
  explicit Converter(std::string_view filename) : filename_(filename) {}

  absl::StatusOr<JsonConfigBody> convertRoot(const hcl::JsonValue& document) {
    if (!document.isObject()) {
      return hcl::syntaxError(filename_, document.pos,
                              "a Terraform JSON file must contain one JSON object");
    }
    JsonConfigBody out;
    for (const hcl::JsonMember& member : document.members) {
      const BlockSchema* schema = findBlock(kRootBlocks, member.key);
      if (schema == nullptr) {
        continue;
      }
      std::vector<hcl::BlockLabel> labels;
      CAPTF_RETURN_IF_ERROR(convertBlocks(*schema, member, member.value, labels, out.body.blocks));
    }
    out.value_text = std::move(value_text_);
    return out;
  }

private:
  static const BlockSchema* findBlock(std::span<const BlockSchema> blocks, std::string_view type) {
    const auto it = std::find_if(blocks.begin(), blocks.end(),
                                 [&](const BlockSchema& b) { return b.type == type; });
    return it == blocks.end() ? nullptr : &*it;
  }

  absl::Status error(const hcl::Pos& pos, std::string_view message) const {
    return hcl::syntaxError(filename_, pos, message);
  }

  // Reads the label levels of a block ("resource": {"type": {"name": {...}}}),
  // where each level may also be an array of objects.
  absl::Status convertBlocks(const BlockSchema& schema, const hcl::JsonMember& type_member,
                             const hcl::JsonValue& value, std::vector<hcl::BlockLabel>& labels,
                             std::vector<hcl::Block>& out) {
    if (value.isArray()) {
      for (const hcl::JsonValue& element : value.elements) {
        CAPTF_RETURN_IF_ERROR(convertBlocks(schema, type_member, element, labels, out));
      }
      return absl::OkStatus();
    }
    if (!value.isObject()) {
      return error(value.pos, strCat("expected a JSON object for the ", type_member.key,
                                     " block, but found another kind of value"));
    }
    if (std::cmp_less(labels.size(), schema.labels)) {
      for (const hcl::JsonMember& member : value.members) {
        if (member.key == "//") {
          continue;
        }
        labels.push_back(hcl::BlockLabel{member.key, {member.pos, member.pos}, true});
        CAPTF_RETURN_IF_ERROR(convertBlocks(schema, type_member, member.value, labels, out));
        labels.pop_back();
      }
      return absl::OkStatus();
    }
    hcl::Block block;
    block.type = type_member.key;
    block.type_range = {type_member.pos, type_member.pos};
    block.labels = labels;
    const hcl::Pos header = labels.empty() ? type_member.pos : labels.back().range.start;
    block.range = {header, header};
    block.open_brace = {value.pos, value.pos};
    CAPTF_RETURN_IF_ERROR(convertBody(value, *schema.body, block.body));
    block.body.range = {value.pos, value.pos};
    out.push_back(std::move(block));
    return absl::OkStatus();
  }

  absl::Status convertBody(const hcl::JsonValue& object, const BodySchema& schema,
                           hcl::Body& body) {
    std::unordered_set<std::string_view> seen;
    for (const hcl::JsonMember& member : object.members) {
      if (member.key == "//") {
        continue;
      }
      if (const BlockSchema* nested = findBlock(schema.blocks, member.key)) {
        std::vector<hcl::BlockLabel> labels;
        CAPTF_RETURN_IF_ERROR(convertBlocks(*nested, member, member.value, labels, body.blocks));
        continue;
      }
      if (!seen.insert(member.key).second) {
        return error(member.pos, strCat("the argument \"", member.key,
                                        "\" is set twice in this object; each argument may be "
                                        "set only once"));
      }
      const bool as_expression =
          std::find(schema.expression_args.begin(), schema.expression_args.end(), member.key) !=
          schema.expression_args.end();
      hcl::Attribute attr;
      attr.name = member.key;
      attr.name_range = {member.pos, member.pos};
      attr.range = {member.pos, member.value.pos};
      CAPTF_ASSIGN_OR_RETURN(attr.expr, as_expression
                                            ? referenceExpression(member.value)
                                            : hcl::jsonToExpression(member.value, filename_));
      value_text_.emplace(attr.expr.get(), hcl::jsonToString(member.value));
      body.attributes.push_back(std::move(attr));
    }
    return absl::OkStatus();
  }

  // Arguments such as depends_on = ["aws_iam_role.node"] hold references
  // written as strings. A string that is not a valid expression stays a
  // template, so that validation is left to Terraform.
  absl::StatusOr<hcl::ExprPtr> referenceExpression(const hcl::JsonValue& value) {
    if (value.isString()) {
      hcl::Pos start = value.pos;
      ++start.column;
      ++start.byte;
      if (auto expr = hcl::parseExpression(value.text, filename_, {}, start); expr.ok()) {
        return expr;
      }
      return hcl::jsonToExpression(value, filename_);
    }
    if (value.isArray()) {
      auto tuple = std::make_unique<hcl::TupleExpr>(hcl::SourceRange{value.pos, value.pos});
      for (const hcl::JsonValue& element : value.elements) {
        CAPTF_ASSIGN_OR_RETURN(hcl::ExprPtr e, referenceExpression(element));
        tuple->elements.push_back(std::move(e));
      }
      return hcl::ExprPtr(std::move(tuple));
    }
    if (value.isObject()) {
      auto object = std::make_unique<hcl::ObjectExpr>(hcl::SourceRange{value.pos, value.pos});
      for (const hcl::JsonMember& member : value.members) {
        hcl::ObjectItem item;
        auto key =
            std::make_unique<hcl::ScopeTraversalExpr>(hcl::SourceRange{member.pos, member.pos});
        key->root = member.key;
        item.key = std::move(key);
        CAPTF_ASSIGN_OR_RETURN(item.value, referenceExpression(member.value));
        object->items.push_back(std::move(item));
      }
      return hcl::ExprPtr(std::move(object));
    }
    return hcl::jsonToExpression(value, filename_);
  }

  std::string_view filename_;
  std::unordered_map<const hcl::Expression*, std::string> value_text_;
};

} // namespace

absl::StatusOr<JsonConfigBody> jsonConfigBody(const hcl::JsonValue& document,
                                              std::string_view filename) {
  return Converter(filename).convertRoot(document);
}

} // namespace captf::lint
