// FakeCommandRunner: a CommandRunner for unit tests that replays scripted
// answers and checks that each command is exactly the one expected.
//
//   FakeCommandRunner fake;
//   fake.Expect({"sinfo", "--json"}).Env("SLURM_CONF", "/c").Stdout(json);
//   fake.Expect({"scancel", "7"}).ExitCode(1).Stderr("scancel: error: ...");
//   SlurmClient client(fake, ...);
//
// Expectations are consumed in order; with InAnyOrder() a call takes the
// first unused expectation with its argv instead. An unexpected command is a
// test failure showing the expected and the actual argv, and answers
// Internal. Every call is recorded (calls()). The destructor fails the test
// if expectations were left unused. Thread-safe.
#pragma once

#include <gtest/gtest.h>

#include <deque>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cluster/command_runner.h"

namespace tessel {

class FakeCommandRunner : public CommandRunner {
 public:
  class Expectation {
   public:
    explicit Expectation(std::vector<std::string> argv) : argv_(std::move(argv)) {
      result_.exit_code = 0;
    }
    Expectation& Stdout(std::string text) {
      result_.stdout_text = std::move(text);
      return *this;
    }
    Expectation& Stderr(std::string text) {
      result_.stderr_text = std::move(text);
      return *this;
    }
    Expectation& ExitCode(int code) {
      result_.exit_code = code;
      return *this;
    }
    Expectation& KilledBy(int signal) {
      result_.exit_code = -1;
      result_.term_signal = signal;
      return *this;
    }
    // Run() answers this error instead of a result (a timeout, say).
    Expectation& Fails(Status status) {
      error_ = std::move(status);
      return *this;
    }
    // The request must set NAME=VALUE in its environment.
    Expectation& Env(std::string name, std::string value) {
      env_.emplace_back(std::move(name), std::move(value));
      return *this;
    }

   private:
    friend class FakeCommandRunner;
    std::vector<std::string> argv_;
    std::vector<std::pair<std::string, std::string>> env_;
    CommandResult result_;
    Status error_;
    bool used_ = false;
  };

  FakeCommandRunner() = default;
  FakeCommandRunner(const FakeCommandRunner&) = delete;
  FakeCommandRunner& operator=(const FakeCommandRunner&) = delete;
  ~FakeCommandRunner() override {
    for (const auto& e : expectations_) {
      if (!e.used_) ADD_FAILURE() << "expected command never ran: " << FormatArgv(e.argv_);
    }
  }

  Expectation& Expect(std::vector<std::string> argv) {
    std::lock_guard<std::mutex> lock(mu_);
    return expectations_.emplace_back(std::move(argv));
  }
  void InAnyOrder() { in_any_order_ = true; }

  Result<CommandResult> Run(const CommandRequest& request) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(request);
    Expectation* match = nullptr;
    if (in_any_order_) {
      for (auto& e : expectations_) {
        if (!e.used_ && e.argv_ == request.argv) {
          match = &e;
          break;
        }
      }
      if (match == nullptr) {
        ADD_FAILURE() << "unexpected command: " << FormatArgv(request.argv)
                      << "\n  unused expectations:" << UnusedList();
        return Internal("FakeCommandRunner: unexpected command " + FormatArgv(request.argv));
      }
    } else {
      if (next_ >= expectations_.size()) {
        ADD_FAILURE() << "unexpected command #" << calls_.size() << ": " << FormatArgv(request.argv)
                      << "\n  (no more commands expected)";
        return Internal("FakeCommandRunner: unexpected command " + FormatArgv(request.argv));
      }
      match = &expectations_[next_++];
      if (match->argv_ != request.argv) {
        match->used_ = true;
        ADD_FAILURE() << "command #" << calls_.size()
                      << " differs\n  expected: " << FormatArgv(match->argv_)
                      << "\n       got: " << FormatArgv(request.argv);
        return Internal("FakeCommandRunner: unexpected command " + FormatArgv(request.argv));
      }
    }
    match->used_ = true;
    for (const auto& [name, value] : match->env_) {
      const std::string* got = nullptr;
      for (const auto& [n, v] : request.env) {
        if (n == name) got = &v;
      }
      if (got == nullptr) {
        ADD_FAILURE() << FormatArgv(request.argv) << ": expected " << name << "=" << value
                      << " in its environment; not set";
      } else if (*got != value) {
        ADD_FAILURE() << FormatArgv(request.argv) << ": expected " << name << "=" << value
                      << " in its environment; got " << name << "=" << *got;
      }
    }
    if (!match->error_.ok()) return match->error_;
    return match->result_;
  }

  std::vector<CommandRequest> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

  // argv as a shell would need it quoted, for messages.
  static std::string FormatArgv(const std::vector<std::string>& argv) {
    std::ostringstream out;
    out << "[";
    for (size_t i = 0; i < argv.size(); ++i) {
      if (i > 0) out << " ";
      const std::string& a = argv[i];
      bool plain = !a.empty() && a.find_first_not_of(
                                     "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                     "0123456789-_=/.,:%+@[]") == std::string::npos;
      if (plain) {
        out << a;
      } else {
        out << "'";
        for (char c : a) {
          if (c == '\'') {
            out << "'\\''";
          } else {
            out << c;
          }
        }
        out << "'";
      }
    }
    out << "]";
    return out.str();
  }

 private:
  std::string UnusedList() const {
    std::string s;
    for (const auto& e : expectations_) {
      if (!e.used_) s += "\n    " + FormatArgv(e.argv_);
    }
    return s.empty() ? " (none)" : s;
  }

  mutable std::mutex mu_;
  std::deque<Expectation> expectations_;
  std::vector<CommandRequest> calls_;
  size_t next_ = 0;
  bool in_any_order_ = false;
};

}  // namespace tessel
