locals {
  shared = "seen by both"
}
