#include "cluster/command_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <set>

#include "core/strings.h"

extern char** environ;

namespace tessel {
namespace {

using Clock = std::chrono::steady_clock;

std::string ErrnoText(int err) { return std::strerror(err); }

std::string SecondsText(std::chrono::milliseconds ms) {
  return FormatDouble(ms.count() / 1000.0, 3) + " s";
}

// Closes a descriptor once; -1 means closed.
void CloseFd(int& fd) {
  if (fd >= 0) {
    close(fd);
    fd = -1;
  }
}

struct Pipe {
  int read_end = -1;
  int write_end = -1;
  ~Pipe() {
    CloseFd(read_end);
    CloseFd(write_end);
  }
  Status Open() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      return Internal("pipe2: " + ErrnoText(errno));
    }
    read_end = fds[0];
    write_end = fds[1];
    return Status::Ok();
  }
};

void SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// The child's environment: the caller's, with request.env set on top.
std::vector<std::string> BuildEnvironment(const CommandRequest& request) {
  std::set<std::string> overridden;
  for (const auto& [name, value] : request.env) overridden.insert(name);
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    std::string name(entry.substr(0, eq));
    if (!overridden.count(name)) env.emplace_back(entry);
  }
  for (const auto& [name, value] : request.env) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

bool HasNul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

Status ValidateRequest(const CommandRequest& request) {
  if (request.argv.empty() || request.argv[0].empty()) {
    return InvalidArgument("command has an empty argv");
  }
  for (const auto& arg : request.argv) {
    if (HasNul(arg)) {
      return InvalidArgument(request.argv[0] + ": an argument holds a NUL byte");
    }
  }
  for (const auto& [name, value] : request.env) {
    if (name.empty() || name.find('=') != std::string::npos || HasNul(name) || HasNul(value)) {
      return InvalidArgument(request.argv[0] + ": invalid environment variable name '" + name +
                             "'");
    }
  }
  if (request.timeout.count() <= 0) {
    return InvalidArgument(request.argv[0] + ": timeout must be positive");
  }
  return Status::Ok();
}

// posix_spawn attributes and file actions, destroyed on scope exit.
class SpawnSetup {
 public:
  SpawnSetup() {
    posix_spawnattr_init(&attr_);
    posix_spawn_file_actions_init(&actions_);
  }
  ~SpawnSetup() {
    posix_spawnattr_destroy(&attr_);
    posix_spawn_file_actions_destroy(&actions_);
  }
  posix_spawnattr_t* attr() { return &attr_; }
  posix_spawn_file_actions_t* actions() { return &actions_; }

 private:
  posix_spawnattr_t attr_;
  posix_spawn_file_actions_t actions_;
};

// Blocks SIGPIPE in the calling thread while it writes to the child's stdin,
// so a child that exits without reading yields EPIPE instead of killing the
// caller; a SIGPIPE raised meanwhile is consumed before the mask is restored.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask_);
  }
  ~SigpipeBlock() {
    if (got_epipe_ && !was_pending_) {
      sigset_t pipe_set;
      sigemptyset(&pipe_set);
      sigaddset(&pipe_set, SIGPIPE);
      struct timespec zero = {0, 0};
      while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  void NoteEpipe() { got_epipe_ = true; }

 private:
  sigset_t old_mask_;
  bool was_pending_ = false;
  bool got_epipe_ = false;
};

int PidfdOpen(pid_t pid) {
#ifdef SYS_pidfd_open
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd >= 0) fcntl(fd, F_SETFD, FD_CLOEXEC);
  return fd;
#else
  (void)pid;
  return -1;
#endif
}

// Blocks until the child is reaped; returns its wait status.
int ReapBlocking(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 0;
  }
  return status;
}

void FillExit(int wait_status, CommandResult& result) {
  if (WIFEXITED(wait_status)) {
    result.exit_code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    result.term_signal = WTERMSIG(wait_status);
  }
}

}  // namespace

std::string FirstLines(std::string_view text, int max_lines) {
  std::vector<std::string> lines;
  for (const auto& line : Split(text, '\n')) {
    std::string t = Trim(line);
    if (t.empty()) continue;
    if (static_cast<int>(lines.size()) == max_lines) {
      lines.push_back("...");
      break;
    }
    lines.push_back(t);
  }
  return Join(lines, "; ");
}

std::string DescribeCommandFailure(const CommandRequest& request, const CommandResult& result) {
  std::string program = request.argv.empty() ? "(empty argv)" : request.argv[0];
  std::string how = result.term_signal != 0
                        ? "was killed by signal " + std::to_string(result.term_signal)
                        : "exited with code " + std::to_string(result.exit_code);
  std::string detail = FirstLines(result.stderr_text);
  if (detail.empty()) detail = FirstLines(result.stdout_text);
  if (detail.empty()) detail = "(no output)";
  return program + " " + how + ": " + detail;
}

Result<CommandResult> SystemCommandRunner::Run(const CommandRequest& request) {
  TESSEL_RETURN_IF_ERROR(ValidateRequest(request));
  const std::string& program = request.argv[0];

  Pipe out, err, in;
  TESSEL_RETURN_IF_ERROR(out.Open());
  TESSEL_RETURN_IF_ERROR(err.Open());
  if (request.stdin_text) TESSEL_RETURN_IF_ERROR(in.Open());

  SpawnSetup setup;
  // The child's 0-2; every other descriptor of ours is O_CLOEXEC, and where
  // glibc can, all descriptors above 2 are closed in the child regardless.
  if (request.stdin_text) {
    posix_spawn_file_actions_adddup2(setup.actions(), in.read_end, 0);
  } else {
    posix_spawn_file_actions_addopen(setup.actions(), 0, "/dev/null", O_RDONLY, 0);
  }
  posix_spawn_file_actions_adddup2(setup.actions(), out.write_end, 1);
  posix_spawn_file_actions_adddup2(setup.actions(), err.write_end, 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(setup.actions(), 3);
#endif
  // Own process group (killed as a whole on timeout), default dispositions
  // for signals the caller may ignore (SIGPIPE), nothing blocked.
  sigset_t all, none;
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  sigemptyset(&none);
  posix_spawnattr_setpgroup(setup.attr(), 0);
  posix_spawnattr_setsigdefault(setup.attr(), &all);
  posix_spawnattr_setsigmask(setup.attr(), &none);
  posix_spawnattr_setflags(setup.attr(),
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  std::vector<std::string> argv_strings = request.argv;
  std::vector<char*> argv = CStrings(argv_strings);
  std::vector<std::string> env_strings = BuildEnvironment(request);
  std::vector<char*> envp = CStrings(env_strings);

  const auto start = Clock::now();
  const auto deadline = start + request.timeout;
  pid_t pid = -1;
  int rc =
      posix_spawnp(&pid, program.c_str(), setup.actions(), setup.attr(), argv.data(), envp.data());
  if (rc != 0) {
    if (rc == ENOENT || rc == EACCES || rc == ENOEXEC || rc == ENOTDIR) {
      return NotFound(program + ": cannot execute (" + ErrnoText(rc) +
                      "); is it installed and on PATH?");
    }
    return Internal(program + ": posix_spawnp failed: " + ErrnoText(rc));
  }
  CloseFd(out.write_end);
  CloseFd(err.write_end);
  CloseFd(in.read_end);
  SetNonBlocking(out.read_end);
  SetNonBlocking(err.read_end);
  if (in.write_end >= 0) SetNonBlocking(in.write_end);

  SigpipeBlock sigpipe_block;
  int pidfd = PidfdOpen(pid);
  CommandResult result;
  size_t stdin_written = 0;
  const std::string empty;
  const std::string& stdin_text = request.stdin_text ? *request.stdin_text : empty;
  if (in.write_end >= 0 && stdin_text.empty()) CloseFd(in.write_end);
  bool exited = false;
  int wait_status = 0;
  bool timed_out = false;
  Status io_error;
  char buffer[65536];

  while (out.read_end >= 0 || err.read_end >= 0 || !exited) {
    if (!exited && pidfd < 0) {
      pid_t r = waitpid(pid, &wait_status, WNOHANG);
      if (r == pid) exited = true;
      if (exited && out.read_end < 0 && err.read_end < 0) break;
    }
    auto now = Clock::now();
    if (now >= deadline) {
      timed_out = true;
      break;
    }
    auto remaining =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    // Without a pidfd, exit is noticed by polling waitpid every 20 ms.
    int wait_ms =
        static_cast<int>((pidfd < 0 && !exited) ? std::min<long long>(remaining, 20) : remaining);

    pollfd fds[4];
    int* owners[4];
    int n = 0;
    for (int* fd : {&out.read_end, &err.read_end}) {
      if (*fd >= 0) {
        fds[n] = {*fd, POLLIN, 0};
        owners[n++] = fd;
      }
    }
    if (in.write_end >= 0) {
      fds[n] = {in.write_end, POLLOUT, 0};
      owners[n++] = &in.write_end;
    }
    if (pidfd >= 0 && !exited) {
      fds[n] = {pidfd, POLLIN, 0};
      owners[n++] = &pidfd;
    }
    int ready = poll(fds, n, wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      io_error = Internal(program + ": poll failed: " + ErrnoText(errno));
      break;
    }
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      int& fd = *owners[i];
      if (&fd == &pidfd) {
        wait_status = ReapBlocking(pid);
        exited = true;
        CloseFd(pidfd);
      } else if (&fd == &in.write_end) {
        ssize_t w = write(fd, stdin_text.data() + stdin_written, stdin_text.size() - stdin_written);
        if (w > 0) {
          stdin_written += static_cast<size_t>(w);
          if (stdin_written == stdin_text.size()) CloseFd(fd);
        } else if (w < 0 && errno != EINTR && errno != EAGAIN) {
          // EPIPE: the child closed its stdin; the rest is not wanted.
          if (errno == EPIPE) sigpipe_block.NoteEpipe();
          CloseFd(fd);
        } else if (fds[i].revents & (POLLERR | POLLHUP)) {
          CloseFd(fd);
        }
      } else {
        std::string& sink = (&fd == &out.read_end) ? result.stdout_text : result.stderr_text;
        ssize_t r = read(fd, buffer, sizeof(buffer));
        if (r > 0) {
          sink.append(buffer, static_cast<size_t>(r));
        } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
          CloseFd(fd);
        }
      }
    }
  }
  CloseFd(pidfd);
  CloseFd(in.write_end);

  bool killed = false;
  if ((timed_out || !io_error.ok()) && !exited) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    wait_status = ReapBlocking(pid);
    killed = true;
  }
  if (!io_error.ok()) return io_error;
  if (killed) {
    return Unavailable(program + " timed out after " + SecondsText(request.timeout) +
                       "; killed its process group" +
                       (result.stderr_text.empty()
                            ? std::string()
                            : "; stderr so far: " + FirstLines(result.stderr_text)));
  }
  // Exited in time; a timeout that only cut off output from processes the
  // command left in the background is not an error.
  FillExit(wait_status, result);
  return result;
}

}  // namespace tessel
