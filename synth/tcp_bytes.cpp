// Bytes a TCP socket has received, from the kernel (TCP_INFO's tcpi_bytes_received, Linux 4.1
// on): the LLM client's watcher bounds a reply by it, headers included, which httplib reads
// without a limit of its own. Apart from llm.cpp because <linux/tcp.h> and <netinet/tcp.h>
// (which httplib brings) define the same structures.
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <optional>

namespace syspilot::synth {

std::optional<std::uint64_t> tcp_bytes_received(int fd) {
  struct tcp_info info {};
  socklen_t len = sizeof info;
  if (fd < 0 || ::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return std::nullopt;
  // An older kernel fills a shorter structure: the field is then absent.
  if (len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof info.tcpi_bytes_received) return std::nullopt;
  return info.tcpi_bytes_received;
}

}  // namespace syspilot::synth
