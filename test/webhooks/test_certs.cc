#include "test/webhooks/test_certs.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace captf::webhooks::testing {
namespace {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Free>;
using Cert = std::unique_ptr<X509, Free>;
using Bio = std::unique_ptr<BIO, Free>;

void check(bool ok, const char* what) {
  if (!ok) {
    throw std::runtime_error(std::string("OpenSSL: ") + what);
  }
}

Key newKey() {
  Key key(EVP_EC_gen("P-256"));
  check(key != nullptr, "EVP_EC_gen");
  return key;
}

std::string bioString(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return {data, static_cast<size_t>(n)};
}

std::string keyPem(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  check(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1,
        "PEM_write_bio_PrivateKey");
  return bioString(bio.get());
}

std::string certPem(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  check(PEM_write_bio_X509(bio.get(), cert) == 1, "PEM_write_bio_X509");
  return bioString(bio.get());
}

Key readKey(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Key key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  check(key != nullptr, "PEM_read_bio_PrivateKey");
  return key;
}

Cert readCert(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Cert cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  check(cert != nullptr, "PEM_read_bio_X509");
  return cert;
}

void addExt(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  check(ext != nullptr, "X509V3_EXT_conf_nid");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

Cert newCert(EVP_PKEY* key, const std::string& cn, long serial) {
  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24L * 3600L);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  return cert;
}

} // namespace

KeyPair makeCa(const std::string& common_name) {
  Key key = newKey();
  Cert cert = newCert(key.get(), common_name, 1);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get()));
  addExt(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE");
  addExt(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  addExt(cert.get(), cert.get(), NID_subject_key_identifier, "hash");
  check(X509_sign(cert.get(), key.get(), EVP_sha256()) > 0, "X509_sign");
  return {certPem(cert.get()), keyPem(key.get())};
}

KeyPair makeServingCert(const KeyPair& ca, const std::vector<std::string>& dns_names, long serial) {
  Key ca_key = readKey(ca.key_pem);
  Cert ca_cert = readCert(ca.cert_pem);
  Key key = newKey();
  Cert cert = newCert(key.get(), dns_names.empty() ? "webhook" : dns_names.front(), serial);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get()));
  std::string san = "IP:127.0.0.1";
  for (const std::string& dns : dns_names) {
    san += ",DNS:" + dns;
  }
  addExt(cert.get(), ca_cert.get(), NID_subject_alt_name, san);
  addExt(cert.get(), ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE");
  addExt(cert.get(), ca_cert.get(), NID_key_usage, "critical,digitalSignature,keyEncipherment");
  addExt(cert.get(), ca_cert.get(), NID_ext_key_usage, "serverAuth");
  check(X509_sign(cert.get(), ca_key.get(), EVP_sha256()) > 0, "X509_sign");
  return {certPem(cert.get()), keyPem(key.get())};
}

void writePair(const std::string& dir, const KeyPair& pair) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  for (const auto& [name, content] :
       {std::pair<std::string, const std::string*>{"tls.crt", &pair.cert_pem},
        std::pair<std::string, const std::string*>{"tls.key", &pair.key_pem}}) {
    const fs::path tmp = fs::path(dir) / ("." + name + ".tmp");
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out << *content;
    }
    fs::rename(tmp, fs::path(dir) / name);
  }
}

long serialOf(const std::string& cert_pem) {
  Cert cert = readCert(cert_pem);
  return ASN1_INTEGER_get(X509_get_serialNumber(cert.get()));
}

} // namespace captf::webhooks::testing
