// A static test program for e2e Jobs (see test/rig/CMakeLists.txt).
//   hello copy DEST   copy this executable to DEST (mode 0755)
//   hello run [CODE]  write "hello from $HOSTNAME" to /dev/termination-log, exit CODE
//   hello serve PORT  answer every HTTP request on :PORT with "hello from $HOSTNAME"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

// One request per connection: read what the client sent (a GET fits in one
// read), answer, close.
int serve(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 16) != 0) {
    std::perror("hello: cannot listen");
    return 1;
  }
  const char* host = std::getenv("HOSTNAME");
  const std::string body = std::string("hello from ") + (host != nullptr ? host : "?");
  const std::string reply = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  std::printf("hello serving :%d\n", port);
  std::fflush(stdout);
  for (;;) {
    const int c = accept(fd, nullptr, nullptr);
    if (c < 0) {
      continue;
    }
    char buf[4096];
    if (read(c, buf, sizeof(buf)) > 0) {
      (void)!write(c, reply.data(), reply.size());
    }
    close(c);
  }
}

} // namespace

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
  if (argc >= 3 && std::strcmp(argv[1], "serve") == 0) {
    return serve(std::atoi(argv[2]));
  }
  std::fprintf(stderr, "usage: hello copy DEST | hello run [CODE] | hello serve PORT\n");
  return 2;
}
