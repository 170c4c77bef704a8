#include <gtest/gtest.h>

#include "manager/kube/errors.h"
#include "manager/kube/events.h"
#include "test/manager/kube/fakes.h"

namespace captf::kube {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

// Records writes; can be made to block to prove the recorder never does.
class RecordingWriter final : public Writer {
public:
  absl::StatusOr<Json> create(const Json& object, const CreateOptions&) override {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !blocked_; });
    created.push_back(object);
    return object;
  }
  absl::StatusOr<Json> update(const Json& object, const UpdateOptions&) override { return object; }
  absl::StatusOr<Json> patch(const GroupVersionKind&, const ObjectKey& key, PatchType type,
                             const Json& patch, const PatchOptions&) override {
    std::scoped_lock lock(mu_);
    EXPECT_EQ(type, PatchType::kMerge);
    patched.emplace_back(key, patch);
    return patch;
  }
  absl::StatusOr<Json> apply(const Json& object, const ApplyOptions&) override { return object; }
  absl::Status remove(const GroupVersionKind&, const ObjectKey&, const DeleteOptions&) override {
    return absl::OkStatus();
  }
  void block(bool blocked) {
    {
      std::scoped_lock lock(mu_);
      blocked_ = blocked;
    }
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool blocked_ = false;
  std::vector<Json> created;
  std::vector<std::pair<ObjectKey, Json>> patched;
};

const Json kMachine = Json::parse(R"({"apiVersion":"infrastructure.cluster.x-k8s.io/v1alpha1",
  "kind":"TerraformMachine","metadata":{"namespace":"ns","name":"m1","uid":"u1",
  "resourceVersion":"7"}})");

class EventsTest : public ::testing::Test {
protected:
  EventRecorderOptions options() {
    EventRecorderOptions o;
    o.reporting_controller = "captf.io/manager";
    o.reporting_instance = "pod-1";
    o.queue_capacity = 3;
    return o;
  }
  FakeClock clock_;
  MetricsRegistry metrics_;
  RecordingWriter writer_;
};

TEST_F(EventsTest, FirstOccurrenceCreatesAnEventsV1Event) {
  KubeEventRecorder recorder(writer_, options(), clock_, &metrics_, testing::quietLogger());
  recorder.event(kMachine, EventType::kWarning, "ApplyFailed", "Apply", "tofu apply exited 1");
  recorder.flush();
  ASSERT_EQ(writer_.created.size(), 1U);
  const Json& e = writer_.created[0];
  EXPECT_EQ(e["apiVersion"], "events.k8s.io/v1");
  EXPECT_EQ(e["kind"], "Event");
  EXPECT_EQ(e["metadata"]["namespace"], "ns");
  EXPECT_EQ(e["metadata"]["name"].get<std::string>().rfind("m1.", 0), 0U);
  EXPECT_EQ(e["type"], "Warning");
  EXPECT_EQ(e["reason"], "ApplyFailed");
  EXPECT_EQ(e["action"], "Apply");
  EXPECT_EQ(e["note"], "tofu apply exited 1");
  EXPECT_EQ(e["reportingController"], "captf.io/manager");
  EXPECT_EQ(e["reportingInstance"], "pod-1");
  EXPECT_EQ(e["regarding"], Json::parse(R"({"apiVersion":"infrastructure.cluster.x-k8s.io/v1alpha1",
    "kind":"TerraformMachine","namespace":"ns","name":"m1","uid":"u1","resourceVersion":"7"})"));
  EXPECT_EQ(e["eventTime"], formatMicroTime(clock_.wallNow()));
}

TEST_F(EventsTest, RepeatsBecomeOneSeries) {
  KubeEventRecorder recorder(writer_, options(), clock_, &metrics_, testing::quietLogger());
  for (int i = 0; i < 3; ++i) {
    if (i > 0) {
      clock_.advance(seconds(30));
    }
    recorder.event(kMachine, EventType::kWarning, "ApplyFailed", "Apply", "try again");
    recorder.flush();
  }
  recorder.event(kMachine, EventType::kNormal, "Applied", "Apply", "ok");
  recorder.flush();
  ASSERT_EQ(writer_.created.size(), 2U) << "a different reason is a different event";
  ASSERT_EQ(writer_.patched.size(), 2U);
  const auto& [key, patch] = writer_.patched.back();
  EXPECT_EQ(key.ns, "ns");
  EXPECT_EQ(key.name, writer_.created[0]["metadata"]["name"].get<std::string>());
  EXPECT_EQ(patch["series"]["count"], 3);
  EXPECT_EQ(patch["series"]["lastObservedTime"], formatMicroTime(clock_.wallNow()));

  clock_.advance(minutes(7));
  recorder.event(kMachine, EventType::kWarning, "ApplyFailed", "Apply", "try again");
  recorder.flush();
  EXPECT_EQ(writer_.created.size(), 3U) << "past the series window a new event starts";
}

// As client-go's events.k8s.io/v1 recorder: the note is part of what makes
// two occurrences the same, so each approved plan or blocked Job keeps its
// own Event instead of folding into the first one's note.
TEST_F(EventsTest, ADifferentNoteIsADifferentEvent) {
  KubeEventRecorder recorder(writer_, options(), clock_, &metrics_, testing::quietLogger());
  recorder.event(kMachine, EventType::kNormal, "PlanApproved", "Reconcile", "plan p1:aaa");
  recorder.flush();
  clock_.advance(seconds(30));
  recorder.event(kMachine, EventType::kNormal, "PlanApproved", "Reconcile", "plan p1:bbb");
  recorder.flush();
  ASSERT_EQ(writer_.created.size(), 2U);
  EXPECT_EQ(writer_.created[0]["note"], "plan p1:aaa");
  EXPECT_EQ(writer_.created[1]["note"], "plan p1:bbb");
  EXPECT_TRUE(writer_.patched.empty());
}

TEST_F(EventsTest, NeverBlocksAndDropsWhenFull) {
  writer_.block(true);
  {
    KubeEventRecorder recorder(writer_, options(), clock_, &metrics_, testing::quietLogger());
    // The background thread takes the first event and blocks in create();
    // the caller is never blocked, and beyond the capacity events drop.
    for (int i = 0; i < 10; ++i) {
      recorder.event(kMachine, EventType::kNormal, "R" + std::to_string(i), "A", "n");
    }
    EXPECT_NE(metrics_.render().find("\ncaptf_events_dropped_total "), std::string::npos);
    writer_.block(false);
  }
  EXPECT_GE(writer_.created.size(), 3U);
  EXPECT_LE(writer_.created.size(), 6U);
  std::string text = metrics_.render();
  auto pos = text.find("\ncaptf_events_dropped_total ");
  ASSERT_NE(pos, std::string::npos);
  double dropped = std::stod(text.substr(pos + 28));
  EXPECT_EQ(dropped + static_cast<double>(writer_.created.size()), 10);
}

TEST_F(EventsTest, LongNotesAreCutAtUtf8Boundaries) {
  std::string note(1023, 'x');
  note += "é"; // two bytes straddling the 1024 limit
  Json event = KubeEventRecorder::makeEvent(kMachine, EventType::kNormal, "R", "A", note, options(),
                                            clock_.wallNow(), 1);
  KubeEventRecorder recorder(writer_, options(), clock_, nullptr, testing::quietLogger());
  recorder.event(kMachine, EventType::kNormal, "R", "A", note);
  recorder.flush();
  ASSERT_EQ(writer_.created.size(), 1U);
  EXPECT_EQ(writer_.created[0]["note"].get<std::string>().size(), 1023U);
  EXPECT_EQ(event["metadata"]["namespace"], "ns");
}

TEST_F(EventsTest, ClusterScopedObjectsReportInDefault) {
  Json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "n1"}}}};
  Json event = KubeEventRecorder::makeEvent(node, EventType::kNormal, "R", "A", "", options(),
                                            clock_.wallNow(), 1);
  EXPECT_EQ(event["metadata"]["namespace"], "default");
  EXPECT_FALSE(event["regarding"].contains("namespace"));
}

} // namespace
} // namespace captf::kube
