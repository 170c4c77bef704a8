#include "manager/reports/report_server.h"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include "captf/runner/v1alpha1/report.grpc.pb.h"
#include "contract/report.h"
#include "manager/api/keys.h"
#include "manager/kube/errors.h"
#include "manager/kube/object.h"

namespace captf::reports {
namespace {

namespace pb = captf::runner::v1alpha1;
using nlohmann::json;

std::string metadataValue(const grpc::ServerContext& context, std::string_view key) {
  const auto& metadata = context.client_metadata();
  const auto found = metadata.find(grpc::string_ref(key.data(), key.size()));
  if (found == metadata.end()) {
    return "";
  }
  return {found->second.data(), found->second.size()};
}

// A finished Job (or one being deleted) takes no more reports.
bool runEnded(const json& job) {
  if (kube::meta::isDeleting(job)) {
    return true;
  }
  const json* conditions = kube::fieldAt(job, "status.conditions");
  if (conditions == nullptr || !conditions->is_array()) {
    return false;
  }
  for (const json& c : *conditions) {
    const std::string type = c.value("type", "");
    if ((type == "Complete" || type == "Failed" || type == "FailureTarget" ||
         type == "SuccessCriteriaMet") &&
        c.value("status", "") == "True") {
      return true;
    }
  }
  return false;
}

bool readable(const std::string& path) {
  return std::ifstream(path).good();
}

} // namespace

class ReportServer::Service final : public pb::RunReporter::Service {
public:
  Service(JobLookup jobs, RunReports& reports, kube::MetricsRegistry& metrics,
          std::shared_ptr<spdlog::logger> logger, const ReportServerLimits& limits,
          kube::Clock& clock)
      : jobs_(std::move(jobs)), reports_(reports),
        rejections_(metrics.counter("captf_run_report_rejections_total",
                                    "[ALPHA] Run report calls refused, by reason.", {"reason"})),
        events_(metrics.counter("captf_run_report_events_total",
                                "[ALPHA] Run report events taken from runners.", {})),
        open_calls_(metrics.gauge("captf_run_report_calls_open",
                                  "[ALPHA] Run report calls taken and not yet ended.", {})),
        logger_(std::move(logger)), limits_(limits), clock_(clock),
        watchdog_([this](std::stop_token stop) { watch(stop); }) {
    for (const char* reason :
         {"missing_credentials", "unknown_job", "bad_token", "run_ended", "too_many_events",
          "too_many_bytes", "too_many_calls", "rate_limited", "deadline"}) {
      rejections_.withLabels({reason});
    }
    events_.withLabels({});
    open_calls_.withLabels({});
  }

  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  grpc::Status Report(grpc::ServerContext* context, grpc::ServerReader<pb::ReportRequest>* reader,
                      pb::ReportResponse* response) override {
    auto job = authenticate(*context);
    if (!job.ok()) {
      return {job.status().code() == absl::StatusCode::kUnauthenticated
                  ? grpc::StatusCode::UNAUTHENTICATED
                  : grpc::StatusCode::PERMISSION_DENIED,
              std::string(job.status().message())};
    }
    const std::string job_name = metadataValue(*context, contract::kReportJobHeader);
    const std::string uid = kube::meta::uid(*job);
    if (const char* reason = admit(uid); reason != nullptr) {
      return throttle(reason, job_name, "the run reports too much at once");
    }
    OpenCall call(*this, uid, *context);
    // Bounded by count and bytes before anything is kept: a caller cannot
    // make the server hold more than max_call_bytes for it.
    std::vector<pb::ReportRequest> batch;
    std::size_t bytes = 0;
    pb::ReportRequest event;
    while (reader->Read(&event)) {
      call.touch();
      if (batch.size() >= limits_.max_events_per_call) {
        return throttle("too_many_events", job_name, "too many events in one call");
      }
      bytes += event.ByteSizeLong();
      if (bytes > limits_.max_call_bytes) {
        return throttle("too_many_bytes", job_name, "too many bytes in one call");
      }
      batch.push_back(std::move(event));
      event.Clear();
    }
    // Read() also ends when the call fails: the watchdog ended it, the
    // client went away, or a message was over the size bound. Only a
    // half-close delivers the batch. The watchdog's own mark is checked
    // first: IsCancelled() may not tell yet when Read() returns. (A failure
    // it misses delivers the valid events read before it, which the runner
    // sends again and the sequence numbers drop.)
    if (call.ended()) {
      rejections_.withLabels({"deadline"}).inc();
      logger_->debug("run report call ended by the server's deadline job=\"{}\"", job_name);
      return grpc::Status::CANCELLED;
    }
    if (context->IsCancelled()) {
      return grpc::Status::CANCELLED;
    }
    events_.withLabels({}).inc(static_cast<double>(batch.size()));
    response->set_accepted_through(reports_.ingest(*job, batch));
    return grpc::Status::OK;
  }

private:
  // A call between admission and its end: counted against its Job and
  // watched for the deadlines.
  struct Watched {
    grpc::ServerContext* context;
    kube::SteadyTime idle_deadline;
    kube::SteadyTime end;
    bool ended = false;
  };

  class OpenCall {
  public:
    OpenCall(Service& service, std::string uid, grpc::ServerContext& context)
        : service_(service), uid_(std::move(uid)) {
      const kube::SteadyTime now = service_.clock_.now();
      std::scoped_lock lock(service_.calls_mu_);
      id_ = ++service_.next_call_;
      service_.calls_.emplace(id_, Watched{&context, now + service_.limits_.idle_timeout,
                                           now + service_.limits_.max_call_duration});
      service_.calls_changed_ = true;
      service_.calls_cv_.notify_all();
      service_.open_calls_.withLabels({}).add(1);
    }
    ~OpenCall() {
      service_.open_calls_.withLabels({}).add(-1);
      {
        std::scoped_lock lock(service_.calls_mu_);
        service_.calls_.erase(id_);
      }
      service_.release(uid_);
    }
    OpenCall(const OpenCall&) = delete;
    OpenCall& operator=(const OpenCall&) = delete;

    // A message arrived: the idle deadline starts again.
    void touch() {
      const kube::SteadyTime now = service_.clock_.now();
      std::scoped_lock lock(service_.calls_mu_);
      service_.calls_.at(id_).idle_deadline = now + service_.limits_.idle_timeout;
    }
    bool ended() const {
      std::scoped_lock lock(service_.calls_mu_);
      return service_.calls_.at(id_).ended;
    }

  private:
    Service& service_;
    std::string uid_;
    std::uint64_t id_ = 0;
  };

  // A Job's share of the server: its open calls and its token bucket.
  struct JobShare {
    int open = 0;
    double tokens = 0;
    kube::SteadyTime refilled;
  };

  // Takes a call of the Job `uid` when it has a call and a token to spare;
  // otherwise the reason it may not.
  const char* admit(const std::string& uid) {
    const kube::SteadyTime now = clock_.now();
    std::scoped_lock lock(shares_mu_);
    forgetIdleShares(now);
    auto [at, fresh] = shares_.try_emplace(uid);
    JobShare& share = at->second;
    if (fresh) {
      share.tokens = limits_.job_call_burst;
      share.refilled = now;
    }
    refill(share, now);
    if (share.open >= limits_.max_calls_per_job) {
      return "too_many_calls";
    }
    if (share.tokens < 1) {
      return "rate_limited";
    }
    share.tokens -= 1;
    ++share.open;
    return nullptr;
  }

  void release(const std::string& uid) {
    std::scoped_lock lock(shares_mu_);
    const auto at = shares_.find(uid);
    if (at != shares_.end()) {
      --at->second.open;
    }
  }

  void refill(JobShare& share, kube::SteadyTime now) const {
    const double seconds = std::chrono::duration<double>(now - share.refilled).count();
    share.tokens =
        std::min(limits_.job_call_burst, share.tokens + seconds * limits_.job_calls_per_second);
    share.refilled = now;
  }

  // A Job with no open call and a full bucket is as good as unknown: its
  // share is dropped, at most once a second, so that the map holds only the
  // Jobs reporting now (each an authenticated, running Job).
  void forgetIdleShares(kube::SteadyTime now) {
    if (now - shares_swept_ < std::chrono::seconds(1)) {
      return;
    }
    shares_swept_ = now;
    for (auto at = shares_.begin(); at != shares_.end();) {
      refill(at->second, now);
      if (at->second.open == 0 && at->second.tokens >= limits_.job_call_burst) {
        at = shares_.erase(at);
      } else {
        ++at;
      }
    }
  }

  // Ends the calls past a deadline. TryCancel is safe from another thread;
  // the context stays valid while its call is registered (the handler
  // unregisters it, under calls_mu_, before it returns).
  void watch(std::stop_token stop) {
    std::unique_lock lock(calls_mu_);
    while (!stop.stop_requested()) {
      const kube::SteadyTime now = clock_.now();
      kube::SteadyTime next = now + limits_.max_call_duration;
      for (auto& [id, call] : calls_) {
        const kube::SteadyTime due = std::min(call.idle_deadline, call.end);
        if (due <= now) {
          if (!call.ended) {
            call.ended = true;
            call.context->TryCancel();
          }
        } else {
          next = std::min(next, due);
        }
      }
      calls_changed_ = false;
      clock_.waitUntil(lock, calls_cv_, stop, next, [this] { return calls_changed_; });
    }
  }

  grpc::Status throttle(const char* reason, const std::string& job, const char* message) {
    rejections_.withLabels({reason}).inc();
    // Debug: a flood of these is what they are for, and the counter tells.
    logger_->debug("run report call refused reason={} job=\"{}\"", reason, job);
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, message};
  }

  absl::Status refuse(const char* reason, absl::Status status, const std::string& job) {
    rejections_.withLabels({reason}).inc();
    // The token itself is never logged.
    logger_->info("run report refused reason={} job=\"{}\"", reason, job);
    return status;
  }

  absl::StatusOr<json> authenticate(const grpc::ServerContext& context) {
    const std::string authorization = metadataValue(context, "authorization");
    const std::string job_name = metadataValue(context, contract::kReportJobHeader);
    constexpr std::string_view kBearer = "Bearer ";
    const auto slash = job_name.find('/');
    if (!authorization.starts_with(kBearer) || authorization.size() == kBearer.size() ||
        slash == std::string::npos || slash == 0 || slash + 1 == job_name.size()) {
      return refuse("missing_credentials",
                    absl::UnauthenticatedError("a bearer token and the Job's name are required"),
                    job_name);
    }
    const std::string token = authorization.substr(kBearer.size());
    auto job = jobs_(job_name.substr(0, slash), job_name.substr(slash + 1));
    if (!job.ok()) {
      return refuse("unknown_job", absl::PermissionDeniedError("no such run"), job_name);
    }
    const json& annotations = kube::meta::annotations(*job);
    const auto hash = annotations.find(std::string(api::kAnnotationReportTokenHash));
    if (hash == annotations.end() || !hash->is_string() ||
        !contract::reportTokenMatches(token, hash->get_ref<const std::string&>())) {
      return refuse("bad_token", absl::PermissionDeniedError("the credential is not this run's"),
                    job_name);
    }
    if (runEnded(*job)) {
      return refuse("run_ended", absl::PermissionDeniedError("the run has ended"), job_name);
    }
    return job;
  }

  JobLookup jobs_;
  RunReports& reports_;
  kube::CounterFamily& rejections_;
  kube::CounterFamily& events_;
  kube::GaugeFamily& open_calls_;
  std::shared_ptr<spdlog::logger> logger_;
  const ReportServerLimits limits_;
  kube::Clock& clock_;

  std::mutex shares_mu_;
  std::map<std::string, JobShare> shares_; // by Job uid
  kube::SteadyTime shares_swept_;

  mutable std::mutex calls_mu_;
  std::condition_variable_any calls_cv_;
  bool calls_changed_ = false;
  std::uint64_t next_call_ = 0;
  std::map<std::uint64_t, Watched> calls_;
  // Last: started after, and stopped before, everything it reads.
  std::jthread watchdog_;
};

ReportServer::ReportServer(ReportServerOptions options, JobLookup jobs, RunReports& reports,
                           kube::MetricsRegistry& metrics, std::shared_ptr<spdlog::logger> logger,
                           kube::Clock& clock)
    : options_(std::move(options)),
      service_(std::make_unique<Service>(std::move(jobs), reports, metrics, logger, options_.limits,
                                         clock)),
      logger_(std::move(logger)) {}

ReportServer::~ReportServer() {
  if (server_) {
    server_->Shutdown();
  }
}

absl::Status ReportServer::listen() {
  if (server_) {
    return absl::OkStatus();
  }
  if (!readable(options_.cert_file) || !readable(options_.key_file)) {
    return absl::FailedPreconditionError("run reports: cannot read the serving certificate " +
                                         options_.cert_file + " or its key " + options_.key_file);
  }
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      options_.key_file, options_.cert_file,
      static_cast<unsigned int>(std::max(1, options_.cert_refresh_seconds)));
  grpc::experimental::TlsServerCredentialsOptions tls(provider);
  tls.watch_identity_key_cert_pairs();
  tls.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  std::string address = options_.bind_address;
  if (address.starts_with(':')) {
    address = "0.0.0.0" + address;
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::experimental::TlsServerCredentials(tls), &port_);
  builder.RegisterService(service_.get());
  // Small calls from many runners, some of them hostile: bound what one
  // message may be, how many threads the server starts (beyond the cap a
  // new call is refused with RESOURCE_EXHAUSTED instead of queued) and what
  // gRPC buffers (docs/decisions/run-reports.md).
  const ReportServerLimits& limits = options_.limits;
  builder.SetMaxReceiveMessageSize(static_cast<int>(limits.max_message_bytes));
  grpc::ResourceQuota quota("captf-run-reports");
  quota.SetMaxThreads(limits.max_threads);
  quota.Resize(limits.max_transport_bytes);
  builder.SetResourceQuota(quota);
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) {
    server_.reset();
    return absl::UnavailableError("run reports: cannot listen on " + options_.bind_address);
  }
  logger_->info("run report server listening port={}", port_);
  return absl::OkStatus();
}

absl::Status ReportServer::start(std::stop_token stop) {
  if (absl::Status s = listen(); !s.ok()) {
    return s;
  }
  std::mutex mu;
  std::condition_variable_any done;
  std::unique_lock lock(mu);
  done.wait(lock, stop, [] { return false; });
  // Calls in flight get a moment to finish; runners retry or fall silent.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_.reset();
  return absl::OkStatus();
}

} // namespace captf::reports
