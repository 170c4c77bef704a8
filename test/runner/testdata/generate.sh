#!/usr/bin/env bash
# Regenerates the runtime fixtures of the runner's unit tests from a real
# runtime (local backend, terraform_data only, no network):
#   test/runner/testdata/generate.sh ~/.cache/captf-rig/bin/tofu-v1.12.6/tofu test/runner/testdata/tofu
#   test/runner/testdata/generate.sh /usr/local/bin/terraform test/runner/testdata/terraform
# Plans: create-only, empty, update-only, destroy-all, and mixed-destructive
# (replace in both orders, delete, update, create, import). Also apply's
# stdout, plan's stderr with errors (with and without colour) and
# `validate -json` with errors.
set -euo pipefail
RT=$1; OUT=$2; mkdir -p "$OUT"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
unset TF_CLI_CONFIG_FILE; export CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1 TF_DATA_DIR=$W/.tf
cd "$W"
v1() { cat > main.tf <<'HCL'
resource "terraform_data" "keep" { input = "k" }
resource "terraform_data" "update" { input = "v1" }
resource "terraform_data" "replace" {
  input            = "r"
  triggers_replace = "v1"
}
resource "terraform_data" "cbd" {
  input            = "c"
  triggers_replace = "v1"
  lifecycle { create_before_destroy = true }
}
resource "terraform_data" "gone" { input = "g" }
resource "terraform_data" "many" {
  count = 2
  input = count.index
}
HCL
}
v2() { cat > main.tf <<'HCL'
resource "terraform_data" "keep" { input = "k" }
resource "terraform_data" "update" { input = "v2" }
resource "terraform_data" "replace" {
  input            = "r"
  triggers_replace = "v2"
}
resource "terraform_data" "cbd" {
  input            = "c"
  triggers_replace = "v2"
  lifecycle { create_before_destroy = true }
}
resource "terraform_data" "many" {
  count = 3
  input = count.index
}
resource "terraform_data" "new" { input = "n" }
import {
  to = terraform_data.imported
  id = "imported-id"
}
resource "terraform_data" "imported" {}
output "o" {
  value = "x"
  sensitive = true
}
HCL
}
v1
$RT init -input=false -no-color >/dev/null
$RT plan -input=false -no-color -detailed-exitcode -out=p0 >/dev/null || test $? = 2
$RT show -json -no-color p0 > "$OUT/create-only.json"
$RT apply -input=false -no-color -auto-approve p0 > "$OUT/apply-create.stdout"
$RT plan -input=false -no-color -detailed-exitcode -out=pe > /dev/null
$RT show -json -no-color pe > "$OUT/empty.json"
v2
$RT plan -input=false -no-color -detailed-exitcode -out=p1 >/dev/null || test $? = 2
$RT show -json -no-color p1 > "$OUT/mixed-destructive.json"
# update-only: only change update
v1; sed -i 's/"v1" }/"v3" }/' main.tf
$RT plan -input=false -no-color -detailed-exitcode -out=p2 >/dev/null || test $? = 2
$RT show -json -no-color p2 > "$OUT/update-only.json"
v1
$RT plan -input=false -no-color -destroy -out=p3 >/dev/null || true
$RT show -json -no-color p3 > "$OUT/destroy-all.json"
# errors
cat > main.tf <<'HCL'
resource "terraform_data" "x" { input = var.nope }
resource "terraform_data" "y" { input = local.nope }
HCL
$RT plan -input=false -no-color > /dev/null 2> "$OUT/plan-error.nocolor.stderr" || true
$RT plan -input=false > /dev/null 2> "$OUT/plan-error.color.stderr" || true
$RT validate -json -no-color > "$OUT/validate-error.json" || true
