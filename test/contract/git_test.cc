#include <array>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/escaping.h"
#include "absl/time/clock.h"
#include "contract/git.h"
#include "test/contract/git_repo.h"
#include "test/contract/tcp_servers.h"
#include "test/webhooks/test_certs.h"

namespace captf::contract::git {
namespace {

namespace fs = std::filesystem;
using ::captf::contract::testing::GitFile;
using ::captf::contract::testing::GitMode;
using ::captf::contract::testing::GitRepo;
using ::captf::contract::testing::RawTreeEntry;
using ::captf::contract::testing::Tarpit;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

class TempDir {
public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "captf-git-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string operator/(std::string_view name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

private:
  fs::path path_;
};

std::string readText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

unsigned modeOf(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

std::vector<std::string> namesIn(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

FetchOptions withHint(std::string hint) {
  FetchOptions options;
  options.ref_hint = std::move(hint);
  return options;
}

FetchOptions withCap(std::uint64_t max_bytes) {
  FetchOptions options;
  options.max_bytes = max_bytes;
  return options;
}

std::string randomBytes(std::size_t size) {
  std::mt19937_64 generator(42);
  std::string out(size, '\0');
  for (char& c : out) {
    c = static_cast<char>(generator() & 0xff);
  }
  return out;
}

std::vector<GitFile> moduleFiles() {
  return {
      {"main.tf", "variable \"x\" {}\n"},
      {"scripts/run.sh", "#!/bin/sh\necho ok\n", GitMode::kExecutable},
      {"modules/net/main.tf", "output \"y\" { value = 1 }\n"},
      {"modules/net/shared.tf", "../../shared.tf", GitMode::kSymlink},
      {"shared.tf", "locals {}\n"},
      {"link-to-dir", "modules", GitMode::kSymlink},
  };
}

class GitTest : public ::testing::Test {
protected:
  GitTest() : repo_(tmp_ / "remote.git") {}

  // The fetch's parent directory holds the destination and nothing else.
  void expectNothingBeside(const std::string& destination) {
    std::vector<std::string> names = namesIn(fs::path(destination).parent_path());
    for (const std::string& expected :
         std::vector<std::string>{"remote.git", fs::path(destination).filename().string()}) {
      names.erase(std::remove(names.begin(), names.end(), expected), names.end());
    }
    EXPECT_THAT(names, IsEmpty()) << "left beside " << destination;
  }

  absl::StatusOr<FetchResult> fetch(const std::string& commit, const std::string& destination,
                                    const FetchOptions& options = {}) {
    return fetchCommit(repo_.gitUrl(), Credentials{}, commit, destination, options);
  }

  TempDir tmp_;
  GitRepo repo_;
};

// --- listRemote, resolve, resolveName -----------------------------------------

TEST_F(GitTest, ListRemoteReportsBranchesAndTagsPeeledToTheirCommit) {
  const std::string first = repo_.commit(moduleFiles());
  const std::string second = repo_.commit({{"main.tf", "# two\n"}}, "dev");
  repo_.annotatedTag("v1.0.0", first);
  repo_.lightweightTag("v2", second);

  auto refs = listRemote(repo_.gitUrl(), Credentials{}, absl::Seconds(30));
  ASSERT_TRUE(refs.ok()) << refs.status();
  EXPECT_THAT(*refs, UnorderedElementsAre(
                         RemoteRef{"refs/heads/main", first}, RemoteRef{"refs/heads/dev", second},
                         RemoteRef{"refs/tags/v1.0.0", first}, RemoteRef{"refs/tags/v2", second}));

  auto listing = listRemoteWithHead(repo_.gitUrl(), Credentials{}, absl::Seconds(30));
  ASSERT_TRUE(listing.ok()) << listing.status();
  EXPECT_EQ(listing->head, "refs/heads/main");
  EXPECT_EQ(listing->refs.size(), 4u);
}

TEST_F(GitTest, ListRemoteOfAMissingRepositoryNamesTheRemote) {
  GitUrl url = repo_.gitUrl();
  url.canonical += "-missing";
  auto refs = listRemote(url, Credentials{}, absl::Seconds(30));
  EXPECT_FALSE(refs.ok());
  EXPECT_THAT(refs.status().message(), HasSubstr("ls-remote " + url.canonical + ": "));
}

TEST(GitResolve, ResolvesBranchesAndTagsAndPassesCommitsThrough) {
  const std::string a(40, 'a');
  const std::string b(40, 'b');
  const std::vector<RemoteRef> refs = {{"refs/heads/main", a}, {"refs/tags/v1", b}};
  EXPECT_EQ(resolve(refs, GitRef{GitRefKind::kBranch, "main"}).value(), a);
  EXPECT_EQ(resolve(refs, GitRef{GitRefKind::kTag, "v1"}).value(), b);
  const std::string c(40, 'c');
  EXPECT_EQ(resolve(refs, GitRef{GitRefKind::kCommit, c}).value(), c);

  auto missing = resolve(refs, GitRef{GitRefKind::kBranch, "v1"});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("branch v1"));
  EXPECT_EQ(resolve(refs, GitRef{GitRefKind::kTag, "main"}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(GitResolve, ResolveNameTriesCommitThenTagThenBranch) {
  const std::string a(40, 'a');
  const std::vector<RemoteRef> refs = {
      {"refs/heads/main", a}, {"refs/heads/both", a}, {"refs/tags/both", a}};
  EXPECT_EQ(resolveName(refs, "main").value(), (GitRef{GitRefKind::kBranch, "main"}));
  EXPECT_EQ(resolveName(refs, "both").value(), (GitRef{GitRefKind::kTag, "both"}));
  const std::string id(40, 'd');
  EXPECT_EQ(resolveName(refs, id).value(), (GitRef{GitRefKind::kCommit, id}));

  auto missing = resolveName(refs, "nope");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("nope"));
  EXPECT_EQ(resolveName(refs, "bad..name").status().code(), absl::StatusCode::kInvalidArgument);
}

// --- fetchCommit ----------------------------------------------------------------

TEST_F(GitTest, FetchCommitWritesTheTreeAndReportsTheCommit) {
  const std::string commit = repo_.commit(moduleFiles());
  const std::string destination = tmp_ / "checkout";

  auto result = fetch(commit, destination, withHint("refs/heads/main"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->commit, commit);
  EXPECT_EQ(result->files, 4u);
  std::uint64_t bytes = 0;
  for (const GitFile& file : moduleFiles()) {
    if (file.mode != GitMode::kSymlink) {
      bytes += file.content.size();
    }
  }
  EXPECT_EQ(result->bytes, bytes);

  const fs::path root(destination);
  EXPECT_THAT(namesIn(root),
              ElementsAre("link-to-dir", "main.tf", "modules", "scripts", "shared.tf"));
  EXPECT_EQ(readText(root / "main.tf"), "variable \"x\" {}\n");
  EXPECT_EQ(modeOf(root / "main.tf"), 0644u);
  EXPECT_EQ(modeOf(root / "scripts/run.sh"), 0755u);
  EXPECT_EQ(modeOf(root / "modules"), 0755u);
  EXPECT_EQ(fs::read_symlink(root / "modules/net/shared.tf"), "../../shared.tf");
  EXPECT_EQ(readText(root / "modules/net/shared.tf"), "locals {}\n");
  EXPECT_EQ(readText(root / "link-to-dir/net/main.tf"), "output \"y\" { value = 1 }\n");
  EXPECT_FALSE(fs::exists(root / ".git"));
  expectNothingBeside(destination);
}

TEST_F(GitTest, FetchCommitFillsAnExistingEmptyDirectory) {
  const std::string commit = repo_.commit(moduleFiles());
  const std::string destination = tmp_ / "mount";
  fs::create_directory(destination);

  auto result = fetch(commit, destination);
  ASSERT_TRUE(result.ok()) << result.status();
  // The temporary directory was inside it (a mount point cannot be renamed
  // over) and is gone.
  EXPECT_THAT(namesIn(destination),
              ElementsAre("link-to-dir", "main.tf", "modules", "scripts", "shared.tf"));
  EXPECT_EQ(readText(fs::path(destination) / "scripts/run.sh"), "#!/bin/sh\necho ok\n");
}

TEST_F(GitTest, FetchCommitFetchesACommitBehindTheTip) {
  const std::string old = repo_.commit({{"main.tf", "# old\n"}});
  repo_.commit({{"main.tf", "# new\n"}});
  const std::string destination = tmp_ / "checkout";

  auto result = fetch(old, destination, withHint("refs/heads/main"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(readText(fs::path(destination) / "main.tf"), "# old\n");
}

TEST_F(GitTest, FetchCommitOfAnUnknownCommitIsNotFoundAndLeavesNothing) {
  repo_.commit(moduleFiles());
  const std::string destination = tmp_ / "checkout";
  auto result = fetch(std::string(40, '7'), destination);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound) << result.status();
  EXPECT_THAT(result.status().message(), HasSubstr("commit 777777777777"));
  EXPECT_FALSE(fs::exists(destination));
  expectNothingBeside(destination);
}

TEST_F(GitTest, FetchCommitRefusesANonEmptyDestination) {
  const std::string commit = repo_.commit(moduleFiles());
  const std::string destination = tmp_ / "checkout";
  fs::create_directory(destination);
  std::ofstream(fs::path(destination) / "keep") << "mine";

  auto result = fetch(commit, destination);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition) << result.status();
  EXPECT_THAT(namesIn(destination), ElementsAre("keep"));
}

TEST_F(GitTest, FetchCommitRefusesAGitlink) {
  const std::string commit =
      repo_.commit({{"main.tf", "# x\n"}, {"vendor/lib", std::string(40, 'e'), GitMode::kGitlink}});
  const std::string destination = tmp_ / "checkout";
  auto result = fetch(commit, destination);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << result.status();
  EXPECT_THAT(result.status().message(), HasSubstr("submodule at vendor/lib"));
  EXPECT_FALSE(fs::exists(destination));
  expectNothingBeside(destination);
}

TEST_F(GitTest, FetchCommitRefusesAGitmodulesFile) {
  const std::string commit = repo_.commit(
      {{"main.tf", "# x\n"}, {".gitmodules", "[submodule \"a\"]\n\tpath = a\n\turl = ../a\n"}});
  const std::string destination = tmp_ / "mount";
  fs::create_directory(destination);
  auto result = fetch(commit, destination);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << result.status();
  EXPECT_THAT(result.status().message(), HasSubstr(".gitmodules"));
  EXPECT_THAT(namesIn(destination), IsEmpty());
}

struct LinkCase {
  std::string name;
  std::vector<GitFile> files;
};

class GitSymlinkEscapeTest : public GitTest, public ::testing::WithParamInterface<LinkCase> {};

TEST_P(GitSymlinkEscapeTest, FetchCommitRefusesASymlinkLeavingTheRepository) {
  std::vector<GitFile> files = GetParam().files;
  files.push_back({"main.tf", "# x\n"});
  const std::string commit = repo_.commit(files);
  const std::string destination = tmp_ / "checkout";
  auto result = fetch(commit, destination);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << result.status();
  EXPECT_THAT(result.status().message(), HasSubstr("symlink"));
  EXPECT_FALSE(fs::exists(destination));
  expectNothingBeside(destination);
}

INSTANTIATE_TEST_SUITE_P(
    Links, GitSymlinkEscapeTest,
    ::testing::Values(LinkCase{"Parent", {{"up", "..", GitMode::kSymlink}}},
                      LinkCase{"Deep", {{"a/b/c", "../../../etc/passwd", GitMode::kSymlink}}},
                      LinkCase{"Absolute", {{"passwd", "/etc/passwd", GitMode::kSymlink}}},
                      // Each link alone stays inside when read lexically; through
                      // d/e/up (which is d) the second climbs above the root.
                      LinkCase{"ThroughAnotherLink",
                               {{"d/e/up", "..", GitMode::kSymlink},
                                {"top/l", "../d/e/up/../..", GitMode::kSymlink}}},
                      LinkCase{"ThroughALinkToTheRoot",
                               {{"root", ".", GitMode::kSymlink},
                                {"x/y", "../root/..", GitMode::kSymlink}}}),
    [](const ::testing::TestParamInfo<LinkCase>& param) { return param.param.name; });

TEST_F(GitTest, FetchCommitAcceptsSymlinksThatStayInside) {
  const std::string commit = repo_.commit({{"main.tf", "# x\n"},
                                           {"a/b/to-root-file", "../../main.tf", GitMode::kSymlink},
                                           {"a/self", ".", GitMode::kSymlink},
                                           {"a/dangling", "missing/file", GitMode::kSymlink},
                                           {"a/via", "self/b/to-root-file", GitMode::kSymlink}});
  const std::string destination = tmp_ / "checkout";
  auto result = fetch(commit, destination);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(readText(fs::path(destination) / "a/via"), "# x\n");
  EXPECT_EQ(fs::read_symlink(fs::path(destination) / "a/dangling"), "missing/file");
}

TEST_F(GitTest, FetchCommitRefusesEntriesGitWouldNotCheckOut) {
  for (const std::string name : {"..", ".git", ".GIT"}) {
    const std::string commit =
        repo_.commitRaw({{"100644", "main.tf", "# x\n"}, {"40000", name, ""}}, "hostile");
    const std::string destination = tmp_ / "checkout";
    auto result = fetch(commit, destination);
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument)
        << name << ": " << result.status();
    EXPECT_FALSE(fs::exists(destination));
  }
  expectNothingBeside(tmp_ / "checkout");
}

TEST_F(GitTest, FetchCommitStopsAtTheCapOnWrittenBytes) {
  // Zeros compress to almost nothing: the wire stays under the cap, the
  // files do not.
  const std::string commit = repo_.commit({{"main.tf", "# x\n"}, {"big", std::string(1 << 20, 0)}});
  const std::string destination = tmp_ / "checkout";
  auto result = fetch(commit, destination, withCap(256 << 10));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted) << result.status();
  EXPECT_THAT(result.status().message(), HasSubstr("bytes of files"));
  EXPECT_FALSE(fs::exists(destination));
  expectNothingBeside(destination);
}

TEST_F(GitTest, FetchCommitStopsAtTheCapOnReceivedBytes) {
  const std::string commit = repo_.commit({{"main.tf", "# x\n"}, {"noise", randomBytes(2 << 20)}});
  const std::string destination = tmp_ / "mount";
  fs::create_directory(destination);
  auto result = fetch(commit, destination, withCap(256 << 10));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted) << result.status();
  EXPECT_THAT(result.status().message(), HasSubstr("bytes received"));
  EXPECT_THAT(namesIn(destination), IsEmpty());
}

TEST_F(GitTest, FetchCommitStopsWhenCancelledOrPastTheDeadline) {
  const std::string commit = repo_.commit(moduleFiles());
  const std::string destination = tmp_ / "checkout";
  FetchOptions stop;
  stop.cancelled = [] { return true; };
  auto cancelled = fetch(commit, destination, stop);
  EXPECT_EQ(cancelled.status().code(), absl::StatusCode::kCancelled) << cancelled.status();
  FetchOptions no_time;
  no_time.timeout = absl::ZeroDuration();
  auto late = fetch(commit, destination, no_time);
  EXPECT_EQ(late.status().code(), absl::StatusCode::kUnavailable) << late.status();
  EXPECT_THAT(late.status().message(), HasSubstr("timed out"));
  EXPECT_FALSE(fs::exists(destination));
  expectNothingBeside(destination);
}

TEST_F(GitTest, FetchCommitRefusesAnAbbreviatedCommit) {
  auto result = fetch("abc123", tmp_ / "checkout");
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GitNetwork, AnUnreachableServerIsUnavailable) {
  auto url = parseGitUrl("https://127.0.0.1:1/x.git");
  ASSERT_TRUE(url.ok()) << url.status();
  auto refs = listRemote(*url, Credentials{}, absl::Seconds(30));
  EXPECT_EQ(refs.status().code(), absl::StatusCode::kUnavailable) << refs.status();
  EXPECT_THAT(refs.status().message(), HasSubstr("ls-remote https://127.0.0.1:1/x.git: "));

  TempDir tmp;
  auto fetched = fetchCommit(*url, Credentials{}, std::string(40, 'a'), tmp / "checkout", {});
  EXPECT_EQ(fetched.status().code(), absl::StatusCode::kUnavailable) << fetched.status();
  EXPECT_THAT(fetched.status().message(), HasSubstr("fetch https://127.0.0.1:1/x.git: "));
  EXPECT_THAT(namesIn(tmp.path()), IsEmpty());
}

// --- HTTPS: certificates and credentials ---------------------------------------

// A TLS server on 127.0.0.1 answering every request with `response`.
class TlsServer {
public:
  TlsServer(const webhooks::testing::KeyPair& pair, std::string response)
      : response_(std::move(response)) {
    ctx_ = SSL_CTX_new(TLS_server_method());
    BIO* cert = BIO_new_mem_buf(pair.cert_pem.data(), static_cast<int>(pair.cert_pem.size()));
    X509* x509 = PEM_read_bio_X509(cert, nullptr, nullptr, nullptr);
    BIO_free(cert);
    BIO* key = BIO_new_mem_buf(pair.key_pem.data(), static_cast<int>(pair.key_pem.size()));
    EVP_PKEY* pkey = PEM_read_bio_PrivateKey(key, nullptr, nullptr, nullptr);
    BIO_free(key);
    SSL_CTX_use_certificate(ctx_, x509);
    SSL_CTX_use_PrivateKey(ctx_, pkey);
    X509_free(x509);
    EVP_PKEY_free(pkey);
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(::listen(listener_, 16), 0);
    socklen_t length = sizeof address;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  TlsServer(const TlsServer&) = delete;
  TlsServer& operator=(const TlsServer&) = delete;
  ~TlsServer() {
    stopping_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    thread_.join();
    ::close(listener_);
    SSL_CTX_free(ctx_);
  }

  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_) + "/repo.git"; }
  // The requests read after a completed handshake, headers only.
  std::vector<std::string> requests() {
    std::scoped_lock lock(mutex_);
    return requests_;
  }

private:
  void serve() {
    // A client that rejects the certificate closes mid-handshake; writing
    // to it must fail with EPIPE, not kill the test.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    while (!stopping_) {
      const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        return;
      }
      SSL* ssl = SSL_new(ctx_);
      SSL_set_fd(ssl, fd);
      if (SSL_accept(ssl) == 1) {
        std::string request;
        std::array<char, 4096> buffer{};
        int n = 0;
        while (request.find("\r\n\r\n") == std::string::npos &&
               (n = SSL_read(ssl, buffer.data(), static_cast<int>(buffer.size()))) > 0) {
          request.append(buffer.data(), static_cast<std::size_t>(n));
        }
        if (!request.empty()) {
          std::scoped_lock lock(mutex_);
          requests_.push_back(request);
        }
        SSL_write(ssl, response_.data(), static_cast<int>(response_.size()));
        SSL_shutdown(ssl);
      }
      ERR_clear_error();
      SSL_free(ssl);
      ::close(fd);
    }
  }

  std::string response_;
  SSL_CTX* ctx_ = nullptr;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

constexpr std::string_view kNotFound =
    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
constexpr std::string_view kUnauthorized =
    "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"git\"\r\n"
    "Content-Length: 0\r\nConnection: close\r\n\r\n";

class GitHttpsTest : public ::testing::Test {
protected:
  GitHttpsTest()
      : ca_(webhooks::testing::makeCa("captf git test CA")),
        serving_(webhooks::testing::makeServingCert(ca_, {"127.0.0.1", "localhost"}, 7)) {}

  webhooks::testing::KeyPair ca_;
  webhooks::testing::KeyPair serving_;
};

TEST_F(GitHttpsTest, TheServerCertificateMustVerifyAgainstCaCrt) {
  TlsServer server(serving_, std::string(kNotFound));
  auto url = parseGitUrl(server.url());
  ASSERT_TRUE(url.ok()) << url.status();

  auto untrusted = listRemote(*url, Credentials{}, absl::Seconds(30));
  EXPECT_EQ(untrusted.status().code(), absl::StatusCode::kFailedPrecondition) << untrusted.status();
  EXPECT_THAT(untrusted.status().message(), HasSubstr("TLS certificate of 127.0.0.1"));
  EXPECT_THAT(server.requests(), IsEmpty());

  Credentials with_ca;
  with_ca.ca_certificates = ca_.cert_pem;
  auto trusted = listRemote(*url, with_ca, absl::Seconds(30));
  // The handshake went through: the server's 404 is the answer.
  EXPECT_EQ(trusted.status().code(), absl::StatusCode::kNotFound) << trusted.status();
  EXPECT_THAT(server.requests(), Not(IsEmpty()));

  // The CA was trusted for that call only.
  auto again = listRemote(*url, Credentials{}, absl::Seconds(30));
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition) << again.status();
}

TEST_F(GitHttpsTest, AServerAskingForCredentialsIsUnauthenticated) {
  TlsServer server(serving_, std::string(kUnauthorized));
  auto url = parseGitUrl(server.url());
  ASSERT_TRUE(url.ok()) << url.status();
  Credentials none;
  none.ca_certificates = ca_.cert_pem;
  auto asked = listRemote(*url, none, absl::Seconds(30));
  EXPECT_EQ(asked.status().code(), absl::StatusCode::kUnauthenticated) << asked.status();
  EXPECT_THAT(asked.status().message(), HasSubstr("there are none"));

  auto credentials = credentialsFromData({{"token", "s3cr3t-t0ken\n"}, {"ca.crt", ca_.cert_pem}});
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  auto refused = listRemote(*url, *credentials, absl::Seconds(30));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnauthenticated) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("authentication refused"));
  EXPECT_THAT(refused.status().message(), Not(HasSubstr("s3cr3t")));
  // The token went as basic auth with the token user name.
  const std::string basic =
      "Authorization: Basic " + absl::Base64Escape("x-access-token:s3cr3t-t0ken");
  bool sent = false;
  for (const std::string& request : server.requests()) {
    sent = sent || request.find(basic) != std::string::npos;
  }
  EXPECT_TRUE(sent);
}

// --- A server that accepts the connection and never answers ----------------------
//
// The deadline bounds the network too (contract/git.h, "Timeouts"): over
// HTTPS before and after the TLS handshake, and over SSH before the banner.

struct Outcome {
  absl::Status status;
  bool returned = false; // within the limit
  absl::Duration took;
};

// Runs `call` on another thread and waits for it until `limit`. A call still
// blocked then is a failure of the test; closing the tarpit's connections
// lets it end.
template <class Call> Outcome within(absl::Duration limit, Tarpit& tarpit, Call call) {
  const absl::Time start = absl::Now();
  std::future<absl::Status> done = std::async(std::launch::async, std::move(call));
  Outcome out;
  out.returned = done.wait_for(absl::ToChronoMilliseconds(limit)) == std::future_status::ready;
  if (!out.returned) {
    tarpit.release();
  }
  out.status = done.get();
  out.took = absl::Now() - start;
  return out;
}

enum class Tarpitted { kTcpBeforeTls, kAfterTlsHandshake, kSshBeforeBanner };

class GitTarpitTest : public GitHttpsTest, public ::testing::WithParamInterface<Tarpitted> {
protected:
  GitTarpitTest() {
    std::signal(SIGPIPE, SIG_IGN); // as every process using contract/git.h does
    ctx_ = SSL_CTX_new(TLS_server_method());
    BIO* cert =
        BIO_new_mem_buf(serving_.cert_pem.data(), static_cast<int>(serving_.cert_pem.size()));
    X509* x509 = PEM_read_bio_X509(cert, nullptr, nullptr, nullptr);
    BIO_free(cert);
    BIO* key = BIO_new_mem_buf(serving_.key_pem.data(), static_cast<int>(serving_.key_pem.size()));
    EVP_PKEY* pkey = PEM_read_bio_PrivateKey(key, nullptr, nullptr, nullptr);
    BIO_free(key);
    SSL_CTX_use_certificate(ctx_, x509);
    SSL_CTX_use_PrivateKey(ctx_, pkey);
    X509_free(x509);
    EVP_PKEY_free(pkey);
  }
  ~GitTarpitTest() override { SSL_CTX_free(ctx_); }

  // Completes the TLS handshake on `fd` and leaves the connection open.
  Tarpit::Greet tlsHandshake() {
    return [this](int fd) {
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
      SSL* ssl = SSL_new(ctx_);
      SSL_set_fd(ssl, fd); // the descriptor stays open when `ssl` is freed
      SSL_accept(ssl);
      ERR_clear_error();
      SSL_free(ssl);
    };
  }

  SSL_CTX* ctx_ = nullptr;
};

TEST_P(GitTarpitTest, AServerThatNeverAnswersEndsTheCallAtItsTimeout) {
  const Tarpitted kind = GetParam();
  Tarpit tarpit(kind == Tarpitted::kAfterTlsHandshake ? tlsHandshake() : Tarpit::Greet{});
  const std::string port = std::to_string(tarpit.port());
  const std::string text = kind == Tarpitted::kSshBeforeBanner
                               ? "ssh://git@127.0.0.1:" + port + "/repo.git"
                               : "https://127.0.0.1:" + port + "/repo.git";
  auto url = parseGitUrl(text);
  ASSERT_TRUE(url.ok()) << url.status();
  Credentials credentials;
  if (kind == Tarpitted::kAfterTlsHandshake) {
    credentials.ca_certificates = ca_.cert_pem; // the handshake succeeds, then nothing
  }
  const absl::Duration timeout = absl::Seconds(1);

  const Outcome listed = within(timeout + absl::Seconds(2), tarpit,
                                [&] { return listRemote(*url, credentials, timeout).status(); });
  EXPECT_TRUE(listed.returned) << "still blocked after " << listed.took;
  EXPECT_EQ(listed.status.code(), absl::StatusCode::kUnavailable) << listed.status;
  EXPECT_THAT(listed.status.message(), HasSubstr("ls-remote " + url->canonical + ": "));
  EXPECT_THAT(listed.status.message(), HasSubstr("timed out after 1s"));
  EXPECT_GE(tarpit.accepted(), 1); // the connection was made: the wait was on the server

  // A fetch is bounded the same way.
  TempDir tmp;
  const Outcome fetched = within(timeout + absl::Seconds(2), tarpit, [&] {
    FetchOptions options;
    options.timeout = timeout;
    return fetchCommit(*url, credentials, std::string(40, 'a'), tmp / "checkout", options).status();
  });
  EXPECT_TRUE(fetched.returned) << "still blocked after " << fetched.took;
  EXPECT_EQ(fetched.status.code(), absl::StatusCode::kUnavailable) << fetched.status;
  EXPECT_THAT(fetched.status.message(), HasSubstr("fetch " + url->canonical + ": timed out"));
  EXPECT_THAT(namesIn(tmp.path()), IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(Servers, GitTarpitTest,
                         ::testing::Values(Tarpitted::kTcpBeforeTls, Tarpitted::kAfterTlsHandshake,
                                           Tarpitted::kSshBeforeBanner),
                         [](const ::testing::TestParamInfo<Tarpitted>& param) {
                           switch (param.param) {
                           case Tarpitted::kTcpBeforeTls:
                             return std::string("HttpsBeforeTheTlsHandshake");
                           case Tarpitted::kAfterTlsHandshake:
                             return std::string("HttpsAfterTheTlsHandshake");
                           case Tarpitted::kSshBeforeBanner:
                             return std::string("SshBeforeTheBanner");
                           }
                           return std::string("Unknown");
                         });

// --- Credentials -----------------------------------------------------------------

constexpr std::string_view kKey = "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n"
                                  "-----END OPENSSH PRIVATE KEY-----\n";
constexpr std::string_view kKnownHosts =
    "git.example.com ssh-ed25519 "
    "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n";

TEST(GitCredentials, FromDataMapsTokenAndTrimsNewlines) {
  auto token = credentialsFromData({{"token", "abc\r\n"}});
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(token->username, "x-access-token");
  EXPECT_EQ(token->password, "abc");
  EXPECT_FALSE(token->empty());

  auto named = credentialsFromData({{"username", "bot\n"}, {"token", "abc"}});
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->username, "bot");

  auto basic = credentialsFromData({{"username", "me"}, {"password", "pw\n"}, {"other", "x"}});
  ASSERT_TRUE(basic.ok());
  EXPECT_EQ(basic->password, "pw");

  auto ssh = credentialsFromData(
      {{"ssh-privatekey", std::string(kKey)}, {"known_hosts", std::string(kKnownHosts)}});
  ASSERT_TRUE(ssh.ok()) << ssh.status();
  EXPECT_EQ(ssh->ssh_private_key, kKey);

  auto empty = credentialsFromData({});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(GitCredentials, FromDataRefusesContradictionsWithoutQuotingValues) {
  const std::vector<std::map<std::string, std::string>> bad = {
      {{"token", "t0ken-value"}, {"password", "pa55-value"}, {"username", "u"}},
      {{"password", "pa55-value"}},
      {{"ssh-privatekey", std::string(kKey)}},
      {{"ssh-privatekey", "not a key"}, {"known_hosts", std::string(kKnownHosts)}},
      {{"ssh-privatekey",
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n-----END RSA PRIVATE KEY-----\n"},
       {"known_hosts", std::string(kKnownHosts)}},
      {{"known_hosts", "# only a comment\n"}},
      {{"ca.crt", "not a certificate"}},
  };
  for (const auto& data : bad) {
    auto credentials = credentialsFromData(data);
    EXPECT_EQ(credentials.status().code(), absl::StatusCode::kInvalidArgument)
        << credentials.status();
    EXPECT_THAT(credentials.status().message(), Not(HasSubstr("-value")));
  }
}

TEST(GitCredentials, FromDirectoryReadsTheSecretsKeys) {
  TempDir dir;
  std::ofstream(dir / "username") << "me\n";
  std::ofstream(dir / "password") << "pw\n";
  std::ofstream(dir / "ca.crt") << "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n";
  std::ofstream(dir / "unrelated") << "ignored";
  fs::create_directory(dir.path() / "..data");
  auto credentials = credentialsFromDirectory(dir.path().string());
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(credentials->username, "me");
  EXPECT_EQ(credentials->password, "pw");
  EXPECT_THAT(credentials->ca_certificates, HasSubstr("BEGIN CERTIFICATE"));
  EXPECT_TRUE(credentials->ssh_private_key.empty());

  std::ofstream(dir / "token") << "t";
  EXPECT_EQ(credentialsFromDirectory(dir.path().string()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(credentialsFromDirectory(dir / "missing").status().code(),
            absl::StatusCode::kInvalidArgument);
}

// --- known_hosts -------------------------------------------------------------------

std::string keyBlob(std::string_view base64) {
  std::string out;
  EXPECT_TRUE(absl::Base64Unescape(std::string(base64), &out));
  return out;
}

constexpr std::string_view kKeyA =
    "AAAAC3NzaC1lZDI1NTE5AAAAIPBJflC2YsqlL5CoVIkcGjJh0YIhyqI8VNM6tL5UKN6Y";
constexpr std::string_view kKeyB =
    "AAAAC3NzaC1lZDI1NTE5AAAAILBG3L+NYkX3IWj4FMCtaO1hGz/wiNG39Zjn6ncTvuGf";

GitUrl sshUrl(std::string_view text) {
  auto url = parseGitUrl(text);
  EXPECT_TRUE(url.ok()) << url.status();
  return url.value_or(GitUrl{});
}

TEST(GitKnownHosts, MatchesTheHostAndPortAndComparesTheKey) {
  const std::string a = keyBlob(kKeyA);
  const std::string b = keyBlob(kKeyB);
  const std::string hosts = "# comment\n"
                            "git.example.com,other.example ssh-ed25519 " +
                            std::string(kKeyA) + " comment\n" +
                            "[git.example.com]:2222 ssh-ed25519 " + std::string(kKeyB) + "\n";
  EXPECT_TRUE(knownHostsAccept(hosts, sshUrl("git@git.example.com:org/repo.git"), a));
  EXPECT_TRUE(knownHostsAccept(hosts, sshUrl("ssh://git@other.example/repo.git"), a));
  EXPECT_TRUE(knownHostsAccept(hosts, sshUrl("ssh://git@GIT.example.com:22/repo.git"), a));
  // A different key for the host: refused.
  EXPECT_FALSE(knownHostsAccept(hosts, sshUrl("git@git.example.com:org/repo.git"), b));
  // Port 2222 has its own line.
  EXPECT_TRUE(knownHostsAccept(hosts, sshUrl("ssh://git@git.example.com:2222/repo.git"), b));
  EXPECT_FALSE(knownHostsAccept(hosts, sshUrl("ssh://git@git.example.com:2222/repo.git"), a));
  // An unknown host: refused.
  EXPECT_FALSE(knownHostsAccept(hosts, sshUrl("git@unknown.example:repo.git"), a));
}

TEST(GitKnownHosts, WildcardsNegationHashesAndRevocation) {
  const std::string a = keyBlob(kKeyA);
  const std::string wild = "*.example.com,!bad.example.com ssh-ed25519 " + std::string(kKeyA);
  EXPECT_TRUE(knownHostsAccept(wild, sshUrl("git@git.example.com:r.git"), a));
  EXPECT_FALSE(knownHostsAccept(wild, sshUrl("git@bad.example.com:r.git"), a));
  EXPECT_FALSE(knownHostsAccept(wild, sshUrl("git@example.org:r.git"), a));

  // `ssh-keygen -H` of "git.example.com" with salt 0x00..0x13.
  std::string salt(20, '\0');
  for (int i = 0; i < 20; ++i) {
    salt[static_cast<std::size_t>(i)] = static_cast<char>(i);
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  const std::string name = "git.example.com";
  HMAC(EVP_sha1(), salt.data(), static_cast<int>(salt.size()),
       reinterpret_cast<const unsigned char*>(name.data()), name.size(), digest.data(), &length);
  const std::string hashed =
      "|1|" + absl::Base64Escape(salt) + "|" +
      absl::Base64Escape(std::string(reinterpret_cast<const char*>(digest.data()), length)) +
      " ssh-ed25519 " + std::string(kKeyA);
  EXPECT_TRUE(knownHostsAccept(hashed, sshUrl("git@git.example.com:r.git"), a));
  EXPECT_FALSE(knownHostsAccept(hashed, sshUrl("git@git2.example.com:r.git"), a));

  const std::string revoked = "git.example.com ssh-ed25519 " + std::string(kKeyA) +
                              "\n@revoked * ssh-ed25519 " + std::string(kKeyA) + "\n";
  EXPECT_FALSE(knownHostsAccept(revoked, sshUrl("git@git.example.com:r.git"), a));
  const std::string authority = "@cert-authority * ssh-ed25519 " + std::string(kKeyA);
  EXPECT_FALSE(knownHostsAccept(authority, sshUrl("git@git.example.com:r.git"), a));
}

} // namespace
} // namespace captf::contract::git
