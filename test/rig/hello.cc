// A static test program for e2e Jobs (see test/rig/CMakeLists.txt).
//   hello copy DEST   copy this executable to DEST (mode 0755)
//   hello run [CODE]  write "hello from $HOSTNAME" to /dev/termination-log, exit CODE
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <sys/stat.h>

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "copy") == 0) {
    std::ifstream in("/proc/self/exe", std::ios::binary);
    std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
    out << in.rdbuf();
    out.close();
    if (!out) {
      std::fprintf(stderr, "hello: cannot write %s\n", argv[2]);
      return 1;
    }
    return chmod(argv[2], 0755) == 0 ? 0 : 1;
  }
  if (argc >= 2 && std::strcmp(argv[1], "run") == 0) {
    const char* host = std::getenv("HOSTNAME");
    std::ofstream term("/dev/termination-log");
    term << "hello from " << (host != nullptr ? host : "?");
    std::printf("hello ran\n");
    return argc >= 3 ? std::atoi(argv[2]) : 0;
  }
  std::fprintf(stderr, "usage: hello copy DEST | hello run [CODE]\n");
  return 2;
}
