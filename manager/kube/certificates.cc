#include "manager/kube/certificates.h"

#include <array>
#include <fstream>
#include <mutex>
#include <sstream>
#include <utility>

#include <boost/asio/ssl/context.hpp>
#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace captf::kube {
namespace {

namespace net = boost::asio;
namespace ssl = net::ssl;

absl::StatusOr<std::string> readWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(fmt::format("cannot open {}", path));
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) {
    return absl::UnavailableError(fmt::format("cannot read {}", path));
  }
  return buf.str();
}

absl::StatusOr<std::shared_ptr<ssl::context>>
makeContext(const std::string& cert_pem, const std::string& key_pem, const TlsSettings& tls) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* h = ctx->native_handle();
  if (absl::Status s = applyTlsSettings(h, tls); !s.ok()) {
    return s;
  }
  boost::system::error_code ec;
  ctx->use_certificate_chain(net::buffer(cert_pem), ec);
  if (ec) {
    return absl::InvalidArgumentError(
        fmt::format("cannot load the serving certificate: {}", ec.message()));
  }
  ctx->use_private_key(net::buffer(key_pem), ssl::context::pem, ec);
  if (ec) {
    return absl::InvalidArgumentError(fmt::format("cannot load the serving key: {}", ec.message()));
  }
  if (SSL_CTX_check_private_key(h) != 1) {
    return absl::InvalidArgumentError(
        fmt::format("the serving key does not match the certificate: {}", openSslError()));
  }
  return ctx;
}

struct OpenSslFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};

std::string memBioString(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<std::size_t>(n)) : std::string();
}

} // namespace

absl::StatusOr<PemPair> selfSignedPair(std::string_view host) {
  auto fail = [](const char* what) {
    return absl::InternalError(fmt::format("{}: {}", what, openSslError()));
  };
  std::unique_ptr<EVP_PKEY, OpenSslFree> key(EVP_EC_gen("P-256"));
  std::unique_ptr<X509, OpenSslFree> cert(X509_new());
  if (key == nullptr || cert == nullptr) {
    return fail("cannot generate a key");
  }
  std::array<unsigned char, 16> serial{};
  if (RAND_bytes(serial.data(), static_cast<int>(serial.size())) != 1) {
    return fail("cannot draw a serial number");
  }
  serial[0] &= 0x7F; // positive
  BIGNUM* bn = BN_bin2bn(serial.data(), static_cast<int>(serial.size()), nullptr);
  const bool serial_set =
      bn != nullptr && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get())) != nullptr;
  BN_free(bn);
  if (!serial_set || X509_set_version(cert.get(), 2) != 1 ||
      X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(cert.get()), 365L * 24L * 3600L) == nullptr ||
      X509_set_pubkey(cert.get(), key.get()) != 1) {
    return fail("cannot fill the certificate");
  }
  const std::string cn(host);
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                                 0) != 1 ||
      X509_set_issuer_name(cert.get(), name) != 1) {
    return fail("cannot name the certificate");
  }
  const std::string san = cn == "localhost" ? "DNS:localhost,IP:127.0.0.1"
                                            : fmt::format("DNS:{},DNS:localhost,IP:127.0.0.1", cn);
  const std::pair<int, std::string> extensions[] = {
      {NID_subject_alt_name, san},
      {NID_basic_constraints, "critical,CA:FALSE"},
      {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
      {NID_ext_key_usage, "serverAuth"},
  };
  for (const auto& [nid, value] : extensions) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
    std::unique_ptr<X509_EXTENSION, OpenSslFree> ext(
        X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
    if (ext == nullptr || X509_add_ext(cert.get(), ext.get(), -1) != 1) {
      return fail("cannot add a certificate extension");
    }
  }
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) <= 0) {
    return fail("cannot sign the certificate");
  }
  std::unique_ptr<BIO, OpenSslFree> cert_bio(BIO_new(BIO_s_mem()));
  std::unique_ptr<BIO, OpenSslFree> key_bio(BIO_new(BIO_s_mem()));
  if (cert_bio == nullptr || key_bio == nullptr ||
      PEM_write_bio_X509(cert_bio.get(), cert.get()) != 1 ||
      PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) !=
          1) {
    return fail("cannot encode the pair");
  }
  return PemPair{memBioString(cert_bio.get()), memBioString(key_bio.get())};
}

// ---- CertificateReloader ----------------------------------------------------

struct CertificateReloader::Impl {
  std::string cert_file;
  std::string key_file;
  TlsSettings tls;
  std::shared_ptr<spdlog::logger> logger;

  mutable std::mutex mu;
  std::shared_ptr<ssl::context> ctx;
  std::string cert_pem;
  std::string key_pem;
  int generation = 0;
};

CertificateReloader::CertificateReloader(std::string cert_file, std::string key_file,
                                         TlsSettings tls, std::shared_ptr<spdlog::logger> logger)
    : impl_(std::make_unique<Impl>()) {
  impl_->cert_file = std::move(cert_file);
  impl_->key_file = std::move(key_file);
  impl_->tls = std::move(tls);
  impl_->logger = std::move(logger);
}

CertificateReloader::~CertificateReloader() = default;

absl::StatusOr<bool> CertificateReloader::reload() {
  absl::StatusOr<std::string> cert = readWholeFile(impl_->cert_file);
  if (!cert.ok()) {
    return cert.status();
  }
  absl::StatusOr<std::string> key = readWholeFile(impl_->key_file);
  if (!key.ok()) {
    return key.status();
  }
  {
    std::scoped_lock lock(impl_->mu);
    if (impl_->ctx && *cert == impl_->cert_pem && *key == impl_->key_pem) {
      return false;
    }
  }
  // A half-written rotation (new certificate, old key) fails the key check
  // and is retried on the next poll; the old pair keeps serving meanwhile.
  absl::StatusOr<std::shared_ptr<ssl::context>> ctx = makeContext(*cert, *key, impl_->tls);
  if (!ctx.ok()) {
    return ctx.status();
  }
  std::scoped_lock lock(impl_->mu);
  impl_->ctx = *std::move(ctx);
  impl_->cert_pem = *std::move(cert);
  impl_->key_pem = *std::move(key);
  ++impl_->generation;
  return true;
}

absl::Status CertificateReloader::install(const std::string& cert_pem, const std::string& key_pem) {
  absl::StatusOr<std::shared_ptr<ssl::context>> ctx = makeContext(cert_pem, key_pem, impl_->tls);
  if (!ctx.ok()) {
    return ctx.status();
  }
  std::scoped_lock lock(impl_->mu);
  impl_->ctx = *std::move(ctx);
  // Not the files' content: the next reload() that finds files loads them.
  impl_->cert_pem.clear();
  impl_->key_pem.clear();
  ++impl_->generation;
  return absl::OkStatus();
}

std::shared_ptr<void> CertificateReloader::current() const {
  std::scoped_lock lock(impl_->mu);
  return impl_->ctx;
}

int CertificateReloader::generation() const {
  std::scoped_lock lock(impl_->mu);
  return impl_->generation;
}

} // namespace captf::kube
