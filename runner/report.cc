#include "runner/report.h"

#include <algorithm>
#include <utility>

#include <google/protobuf/util/time_util.h>
#include <grpc/support/log.h>
#include <grpcpp/grpcpp.h>

#include "captf/runner/v1alpha1/report.grpc.pb.h"
#include "contract/report.h"
#include "contract/result.h"
#include "contract/text.h"

namespace captf::runner {
namespace {

namespace pb = captf::runner::v1alpha1;
using SteadyClock = std::chrono::steady_clock;

// gRPC's own log lines would land in the runner's stderr between our JSON
// lines: the reporter tells its story in ReportStats instead.
void quietGrpcLog(gpr_log_func_args* /*args*/) {}

std::chrono::steady_clock::duration toChrono(absl::Duration d) {
  return absl::ToChronoNanoseconds(d);
}

// What send() adds to an event: sequence, time and elapsed.
constexpr std::size_t kStampBytes = 64;

// Keeps `event` within the manager's bounds of a message
// (contract/report.h): a call carrying a larger one would be refused, and
// refused again on every retry. Returns false when it cannot be kept.
bool fitForReport(pb::ReportRequest& event) {
  if (event.has_log_line() && event.log_line().text().size() > contract::kMaxReportLineBytes) {
    event.mutable_log_line()->set_text(
        contract::clipText(event.log_line().text(), contract::kMaxReportLineBytes));
  }
  if (event.has_finished() && event.finished().result().has_error()) {
    pb::RunError* error = event.mutable_finished()->mutable_result()->mutable_error();
    if (error->tail().size() > contract::kMaxTailBytes) {
      error->set_tail(contract::clipText(error->tail(), contract::kMaxTailBytes));
    }
  }
  return event.ByteSizeLong() + kStampBytes <= contract::kMaxReportMessageBytes;
}

} // namespace

struct GrpcReporter::Channel {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::RunReporter::Stub> stub;
};

absl::StatusOr<std::unique_ptr<GrpcReporter>> GrpcReporter::start(ReportOptions options,
                                                                  const Clock& clock) {
  if (options.address.empty() || options.token.empty() || options.ca_pem.empty() ||
      options.job.empty()) {
    return absl::InvalidArgumentError(
        "run reports need an address, a token, a CA bundle and the Job's name");
  }
  gpr_set_log_function(quietGrpcLog);
  std::unique_ptr<GrpcReporter> reporter(new GrpcReporter(std::move(options), clock));
  grpc::SslCredentialsOptions tls;
  tls.pem_root_certs = reporter->options_.ca_pem;
  grpc::ChannelArguments args;
  // One connection attempt per call: the call deadline bounds it.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 500);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  reporter->channel_ = std::make_unique<Channel>();
  reporter->channel_->channel =
      grpc::CreateCustomChannel(reporter->options_.address, grpc::SslCredentials(tls), args);
  reporter->channel_->stub = pb::RunReporter::NewStub(reporter->channel_->channel);
  reporter->sender_ = std::jthread([r = reporter.get()](std::stop_token stop) { r->loop(stop); });
  return reporter;
}

GrpcReporter::GrpcReporter(ReportOptions options, const Clock& clock)
    : options_(std::move(options)), clock_(clock), started_(clock.monotonicNow()) {}

GrpcReporter::~GrpcReporter() {
  sender_.request_stop();
  wake_.notify_all();
}

void GrpcReporter::send(pb::ReportRequest event) {
  const bool fits = fitForReport(event); // outside the lock: it may copy a long line
  std::scoped_lock lock(mu_);
  if (stats_.gave_up || closing_) {
    ++stats_.dropped;
    return;
  }
  const bool log_line = event.has_log_line();
  if (!fits) {
    if (log_line) {
      ++dropped_lines_;
    }
    ++stats_.dropped;
    return;
  }
  if (queue_.size() >= options_.max_queued) {
    // Full: a log line is the first thing to go; another event makes room
    // by dropping the oldest queued line, or is dropped itself.
    if (!log_line) {
      const auto line = std::find_if(queue_.begin(), queue_.end(),
                                     [](const pb::ReportRequest& e) { return e.has_log_line(); });
      if (line != queue_.end()) {
        queue_.erase(line);
        ++dropped_lines_;
        ++stats_.dropped;
      }
    }
    if (queue_.size() >= options_.max_queued) {
      if (log_line) {
        ++dropped_lines_;
      }
      ++stats_.dropped;
      return;
    }
  }
  if (log_line && dropped_lines_ > 0) {
    event.mutable_log_line()->set_dropped_before(dropped_lines_);
    dropped_lines_ = 0;
  }
  event.set_sequence(++sequence_);
  using google::protobuf::util::TimeUtil;
  *event.mutable_time() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(clock_.now()));
  *event.mutable_elapsed() = TimeUtil::NanosecondsToDuration(
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.monotonicNow() - started_)
          .count());
  queue_.push_back(std::move(event));
  ++stats_.queued;
  wake_.notify_all();
}

ReportStats GrpcReporter::close(absl::Duration budget) {
  {
    std::scoped_lock lock(mu_);
    closing_ = true;
    deadline_ = SteadyClock::now() + toChrono(budget);
  }
  wake_.notify_all();
  sender_.request_stop();
  sender_.join();
  std::scoped_lock lock(mu_);
  stats_.dropped += queue_.size();
  queue_.clear();
  return stats_;
}

void GrpcReporter::loop(std::stop_token stop) {
  std::deque<pb::ReportRequest> pending; // taken from the queue, not acknowledged
  int failures = 0;
  std::unique_lock lock(mu_);
  while (true) {
    // Wait for events (or the end), then a little longer so that a call
    // carries a batch.
    wake_.wait(lock, stop, [&] { return !queue_.empty() || closing_ || !pending.empty(); });
    if (stop.stop_requested() && !closing_) {
      return;
    }
    if (!closing_) {
      wake_.wait_for(lock, stop, toChrono(options_.batch_delay),
                     [&] { return closing_ || queue_.size() >= options_.max_batch; });
    }
    if (closing_ && deadline_ && SteadyClock::now() >= *deadline_) {
      stats_.dropped += pending.size();
      return;
    }
    while (!queue_.empty() && pending.size() < options_.max_batch) {
      pending.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    if (pending.empty()) {
      if (closing_) {
        return;
      }
      continue;
    }
    lock.unlock();
    const bool ok = call(pending);
    lock.lock();
    if (ok) {
      failures = 0;
      continue;
    }
    ++failures;
    if (stats_.gave_up || failures >= options_.max_failures) {
      stats_.gave_up = true;
      stats_.dropped += pending.size() + queue_.size();
      queue_.clear();
      return;
    }
    // A short pause before the retry, cut short by the end of the run.
    const auto pause = std::chrono::milliseconds(250) * (1 << failures);
    if (closing_ && deadline_) {
      if (SteadyClock::now() + pause >= *deadline_) {
        stats_.dropped += pending.size() + queue_.size();
        queue_.clear();
        return;
      }
    }
    wake_.wait_for(lock, stop, pause, [] { return false; });
    if (stop.stop_requested() && !closing_) {
      return;
    }
  }
}

bool GrpcReporter::call(std::deque<pb::ReportRequest>& pending) {
  grpc::ClientContext context;
  auto deadline = std::chrono::system_clock::now() + toChrono(options_.call_deadline);
  {
    std::scoped_lock lock(mu_);
    if (closing_ && deadline_) {
      const auto left = *deadline_ - SteadyClock::now();
      deadline = std::min(deadline, std::chrono::system_clock::now() +
                                        std::chrono::duration_cast<std::chrono::nanoseconds>(left));
    }
    ++stats_.calls;
  }
  context.set_deadline(deadline);
  context.set_wait_for_ready(true);
  context.AddMetadata("authorization", "Bearer " + options_.token);
  context.AddMetadata(std::string(contract::kReportJobHeader), options_.job);
  pb::ReportResponse response;
  std::unique_ptr<grpc::ClientWriter<pb::ReportRequest>> writer =
      channel_->stub->Report(&context, &response);
  // Within the manager's bound of a call's bytes: what does not fit goes
  // in the next call (it stays pending until acknowledged).
  std::size_t bytes = 0;
  for (const pb::ReportRequest& event : pending) {
    bytes += event.ByteSizeLong();
    if (bytes > contract::kMaxReportCallBytes || !writer->Write(event)) {
      break;
    }
  }
  writer->WritesDone();
  const grpc::Status status = writer->Finish();
  std::scoped_lock lock(mu_);
  if (!status.ok()) {
    ++stats_.failed_calls;
    stats_.last_error = std::to_string(status.error_code()) + ": " + status.error_message();
    // Refused: this run's credential will not be accepted later either.
    if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
        status.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
      stats_.gave_up = true;
    }
    return false;
  }
  const std::uint64_t through = response.accepted_through();
  while (!pending.empty() && pending.front().sequence() <= through) {
    pending.pop_front();
    ++stats_.accepted;
  }
  return true;
}

} // namespace captf::runner
