// GSSAPI for the static executables that link libgit2 (the runner, the
// manager, tfcapi-lint): Debian's libgit2.a calls GSSAPI for HTTP
// "Negotiate" (Kerberos/SPNEGO) authentication, and Debian ships MIT
// Kerberos as shared objects only, which `-static` cannot link. Git module
// sources authenticate with basic auth or SSH keys (contract/git.h), never
// Kerberos, so these stand-ins report that no mechanism is available and
// libgit2 treats Negotiate as unsupported. Linked only into static builds
// (cmake/Static.cmake); the dev build uses the real library.
//
// The signatures are GSSAPI's (RFC 2744) with its types spelled out:
// OM_uint32 is a 32-bit unsigned integer, the other handles are pointers.

#include <cstddef>
#include <cstdint>

namespace {

using OmUint32 = std::uint32_t;

// GSS_S_FAILURE: a routine error (GSS_S_FAILURE is 13 << 16).
constexpr OmUint32 kFailure = 13u << 16;

struct Buffer {
  std::size_t length;
  void* value;
};

void clear(OmUint32* minor) {
  if (minor != nullptr) {
    *minor = 0;
  }
}

} // namespace

// The names are GSSAPI's.
// NOLINTBEGIN(readability-identifier-naming)
extern "C" {

// An OID nobody dereferences: the calls that would take it fail first.
extern const void* const GSS_C_NT_HOSTBASED_SERVICE;
const void* const GSS_C_NT_HOSTBASED_SERVICE = nullptr;

OmUint32 gss_indicate_mechs(OmUint32* minor, void** mech_set) {
  clear(minor);
  if (mech_set != nullptr) {
    *mech_set = nullptr;
  }
  return kFailure;
}

OmUint32 gss_import_name(OmUint32* minor, const void* /*name*/, const void* /*type*/,
                         void** output) {
  clear(minor);
  if (output != nullptr) {
    *output = nullptr;
  }
  return kFailure;
}

OmUint32 gss_init_sec_context(OmUint32* minor, const void* /*credential*/, void** context,
                              const void* /*target*/, const void* /*mech*/, OmUint32 /*flags*/,
                              OmUint32 /*time*/, const void* /*bindings*/, const void* /*input*/,
                              void** actual_mech, Buffer* output, OmUint32* ret_flags,
                              OmUint32* time_rec) {
  clear(minor);
  if (context != nullptr) {
    *context = nullptr;
  }
  if (actual_mech != nullptr) {
    *actual_mech = nullptr;
  }
  if (output != nullptr) {
    *output = Buffer{0, nullptr};
  }
  if (ret_flags != nullptr) {
    *ret_flags = 0;
  }
  if (time_rec != nullptr) {
    *time_rec = 0;
  }
  return kFailure;
}

OmUint32 gss_display_status(OmUint32* minor, OmUint32 /*status*/, int /*type*/,
                            const void* /*mech*/, OmUint32* message_context, Buffer* text) {
  clear(minor);
  if (message_context != nullptr) {
    *message_context = 0;
  }
  if (text != nullptr) {
    *text = Buffer{0, nullptr};
  }
  return kFailure;
}

OmUint32 gss_release_buffer(OmUint32* minor, Buffer* buffer) {
  clear(minor);
  if (buffer != nullptr) {
    *buffer = Buffer{0, nullptr};
  }
  return 0;
}

OmUint32 gss_release_name(OmUint32* minor, void** name) {
  clear(minor);
  if (name != nullptr) {
    *name = nullptr;
  }
  return 0;
}

OmUint32 gss_release_oid_set(OmUint32* minor, void** set) {
  clear(minor);
  if (set != nullptr) {
    *set = nullptr;
  }
  return 0;
}

OmUint32 gss_delete_sec_context(OmUint32* minor, void** context, Buffer* output) {
  clear(minor);
  if (context != nullptr) {
    *context = nullptr;
  }
  if (output != nullptr) {
    *output = Buffer{0, nullptr};
  }
  return 0;
}

} // extern "C"
// NOLINTEND(readability-identifier-naming)
