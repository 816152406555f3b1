// The client commands' contract, end to end: the real `tessel` binary
// against an HttpServer with a fake JobService started here. Outputs, exit
// codes (0 done, 2 refused input, 1 server/connection), TESSEL_SERVER and
// TESSEL_TOKEN, and that the token is never printed.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "server/http_server.h"
#include "testing/fake_job_service.h"
#include "testing/test_data.h"

namespace tessel {
namespace {

using nlohmann::json;

const std::string kAlice = "alice-token-0123456789";
const std::string kBob = "bob-token-0123456789ab";

struct Outcome {
  int code = -1;
  std::string out, err;
};

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q.append("'\\''");
    } else {
      q.push_back(c);
    }
  }
  q.push_back('\'');
  return q;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto tokens = TokenStore::Parse(kAlice + " alice\n" + kBob + " bob\n", "test");
    ASSERT_TRUE(tokens.ok());
    tokens_ = std::move(*tokens);
    server_ = std::make_unique<HttpServer>(fake_, tokens_);
    ASSERT_TRUE(server_->Start("127.0.0.1:0").ok());
    url_ = "http://127.0.0.1:" + std::to_string(server_->port());
    static std::atomic<int> n{0};
    dir_ = testing::ProcessTempDir() + "/client" + std::to_string(n++);
    std::filesystem::create_directories(dir_ + "/jobs");
    std::ofstream(dir_ + "/jobs/a.yaml") << "name: a\ngpus: 8\n";
    std::ofstream(dir_ + "/jobs/bad.yaml") << "invalid: true\n";
    std::ofstream(dir_ + "/alice.token") << "  " << kAlice << "  \nsecond line ignored\n";
  }
  void TearDown() override { server_->Stop(); }

  // Runs `tessel args...` in dir_ with only `env` of the TESSEL_* variables.
  Outcome Tessel(const std::vector<std::string>& args, const std::map<std::string, std::string>& env) {
    static std::atomic<int> n{0};
    std::string base = dir_ + "/run" + std::to_string(n++);
    // Appends only (GCC 12 warns falsely, -Wrestrict, on "lit" + string here).
    std::string cmd = "cd ";
    cmd.append(Quote(dir_)).append(" && env -u TESSEL_SERVER -u TESSEL_TOKEN -u TESSEL_HTTP_PLUGIN");
    for (const auto& [k, v] : env) cmd.append(" ").append(k).append("=").append(Quote(v));
    cmd.append(" ").append(Quote(TESSEL_BINARY));
    for (const std::string& a : args) cmd.append(" ").append(Quote(a));
    cmd.append(" >").append(Quote(base + ".out")).append(" 2>").append(Quote(base + ".err"));
    int rc = std::system(cmd.c_str());
    Outcome r;
    r.code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    r.out = ReadAll(base + ".out");
    r.err = ReadAll(base + ".err");
    for (const std::string& token : {kAlice, kBob}) {
      EXPECT_EQ(r.out.find(token), std::string::npos) << "token printed on stdout";
      EXPECT_EQ(r.err.find(token), std::string::npos) << "token printed on stderr";
    }
    return r;
  }
  // As alice, through the environment.
  Outcome As(const std::string& token, std::vector<std::string> args) {
    return Tessel(args, {{"TESSEL_SERVER", url_}, {"TESSEL_TOKEN", token}});
  }

  testing::FakeJobService fake_;
  TokenStore tokens_;
  std::unique_ptr<HttpServer> server_;
  std::string url_, dir_;
};

TEST_F(ClientTest, SubmitPrintsTheIdAndSendsNameAndFolder) {
  Outcome r = As(kAlice, {"submit", "jobs/a.yaml"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "1\n");
  EXPECT_EQ(r.err, "");
  Outcome j = As(kAlice, {"submit", "jobs/a.yaml", "--json"});
  EXPECT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(json::parse(j.out), json({{"id", 2}}));
  std::string abs_dir = std::filesystem::canonical(dir_).string() + "/jobs";
  EXPECT_EQ(fake_.Calls()[0], "Submit alice admin=0 file=jobs/a.yaml base_dir=" + abs_dir);
  EXPECT_EQ(fake_.SubmittedSpecs()[0], "name: a\ngpus: 8\n");
}

TEST_F(ClientTest, SubmitErrorsAreTheServersFieldErrorsLineByLine) {
  Outcome r = As(kAlice, {"submit", "jobs/bad.yaml"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "error: jobs/bad.yaml:2: gpus: must be a positive integer, got 0\n"
            "error: jobs/bad.yaml:3: model: unknown model 'gpt-9'; known: gpt-1.7b, llama2-7b\n");
  Outcome missing = As(kAlice, {"submit", "jobs/nope.yaml"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.err, "error: cannot read 'jobs/nope.yaml': No such file or directory\n");
  EXPECT_EQ(fake_.Calls().size(), 1u);  // only the bad spec reached the service
}

TEST_F(ClientTest, JobsTableAndJson) {
  Outcome empty = As(kAlice, {"jobs"});
  EXPECT_EQ(empty.code, 0);
  EXPECT_EQ(empty.out, "no active jobs (--all shows finished ones too)\n");
  As(kAlice, {"submit", "jobs/a.yaml"});
  As(kBob, {"submit", "jobs/a.yaml"});
  Outcome t = As(kAlice, {"jobs"});
  EXPECT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("id  name  user   state"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("2024-05-01 12:00:03"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("alice"), std::string::npos);
  EXPECT_EQ(t.out.find("bob"), std::string::npos) << "another user's job listed";
  Outcome j = As(kAlice, {"jobs", "--all", "--json"});
  EXPECT_EQ(j.code, 0);
  json arr = json::parse(j.out);
  ASSERT_EQ(arr.size(), 1u);
  for (const char* k : {"id", "name", "user", "state", "gpu_type", "gpus", "nodes", "plan", "restarts", "submitted",
                        "started", "finished"})
    EXPECT_TRUE(arr[0].contains(k)) << k;
  EXPECT_EQ(arr[0]["id"], 1);
  EXPECT_EQ(arr[0]["submitted"], "2024-05-01T12:00:03Z");
  EXPECT_EQ(fake_.Calls().back(), "Jobs alice all=1 after=0 limit=1000") << "the largest page, from the start";
}

TEST_F(ClientTest, JobShowsHistoryStepsAndCorrections) {
  JobDetail d;
  d.job.name = "train";
  d.job.user = "alice";
  d.job.state = "running";
  d.job.gpu_type = "a100-80g";
  d.job.gpus = 8;
  d.job.nodes = {"node1"};
  d.job.plan = "dp=8 tp=1 pp=1";
  d.job.submitted_us = 1714564803'000000;
  d.job.started_us = 1714564863'000000;
  d.history = {{1714564803'000000, "", "pending", "submitted"}, {1714564863'000000, "pending", "running", "placed"}};
  d.steps = {{1714564900'000000, 100, 0.75, "a100-80g", 8, false}};
  d.corrections = {{"a100-80g", 1.125, 12, ""}};
  int64_t id = fake_.AddJob(d);
  Outcome r = As(kAlice, {"job", std::to_string(id)});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("job 1: train (user alice)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gpus:       8 a100-80g on node1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2024-05-01 12:01:03  pending  running  placed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0.75"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1.125"), std::string::npos) << r.out;
  Outcome j = As(kAlice, {"job", "1", "--json"});
  EXPECT_EQ(j.code, 0);
  json detail = json::parse(j.out);
  EXPECT_EQ(detail["history"].size(), 2u);
  EXPECT_EQ(detail["steps"][0]["step_time_s"], 0.75);
  EXPECT_EQ(detail["corrections"][0]["factor"], 1.125);
}

TEST_F(ClientTest, RefusedRequestsExit2WithTheServersMessage) {
  fake_.AddJob([] {
    JobDetail d;
    d.job.user = "alice";
    d.job.state = "running";
    return d;
  }());
  Outcome other = As(kBob, {"job", "1"});
  EXPECT_EQ(other.code, 2);
  EXPECT_EQ(other.err, "error: job 1 belongs to another user\n");
  Outcome cancel_other = As(kBob, {"cancel", "1"});
  EXPECT_EQ(cancel_other.code, 2);
  Outcome missing = As(kAlice, {"job", "99"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.err, "error: no job 99\n");
  Outcome bad_id = As(kAlice, {"job", "1/cancel"});
  EXPECT_EQ(bad_id.code, 2);
  EXPECT_EQ(bad_id.err, "error: job id '1/cancel': must be a positive integer (see `tessel jobs`)\n");

  Outcome cancel = As(kAlice, {"cancel", "1"});
  EXPECT_EQ(cancel.code, 0) << cancel.err;
  EXPECT_EQ(cancel.out, "job 1: cancelled\n");
  Outcome again = As(kAlice, {"cancel", "1"});
  EXPECT_EQ(again.code, 2);
  EXPECT_EQ(again.err, "error: job 1 is already cancelled\n");
}

TEST_F(ClientTest, NodesTableAndJson) {
  Outcome t = As(kAlice, {"nodes"});
  EXPECT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("node   gpu       gres  gpus  used  free  state"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("2 nodes, 6 of 12 GPUs free\n"), std::string::npos) << t.out;
  Outcome j = As(kAlice, {"nodes", "--json"});
  EXPECT_EQ(j.code, 0);
  json arr = json::parse(j.out);
  ASSERT_EQ(arr.size(), 2u);
  EXPECT_EQ(arr[0]["gpus_free"], 2);
  fake_.nodes_unavailable = true;
  Outcome down = As(kAlice, {"nodes"});
  EXPECT_EQ(down.code, 1);
  EXPECT_EQ(down.err, "error: slurm: sinfo failed: connection refused\n");
}

TEST_F(ClientTest, ServerAndTokenFromFlagsOrEnvironment) {
  // Flags win over the environment.
  Outcome flags = Tessel({"jobs", "--server", url_, "--token-file", "alice.token"},
                     {{"TESSEL_SERVER", "http://127.0.0.1:1"}, {"TESSEL_TOKEN", "wrong-token-0123456789"}});
  EXPECT_EQ(flags.code, 0) << flags.err;
  Outcome bad = As("wrong-token-0123456789", {"jobs"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err,
            "error: invalid token\nhint: check the token in --token-file or $TESSEL_TOKEN (it must be listed in the "
            "server's tokens file)\n");
  Outcome none = Tessel({"jobs"}, {{"TESSEL_SERVER", url_}});
  EXPECT_EQ(none.code, 2);
  EXPECT_EQ(none.err,
            "error: no API token: pass --token-file FILE (the token on its first line) or set TESSEL_TOKEN\n");
  Outcome no_file = Tessel({"jobs", "--token-file", "missing.token"}, {{"TESSEL_SERVER", url_}});
  EXPECT_EQ(no_file.code, 2);
  EXPECT_EQ(no_file.err, "error: --token-file: cannot open 'missing.token': No such file or directory\n");
  Outcome bad_url = As(kAlice, {"jobs", "--server", "127.0.0.1:8642"});
  EXPECT_EQ(bad_url.code, 2);
  EXPECT_EQ(bad_url.err,
            "error: server URL '127.0.0.1:8642': no scheme; expected http://HOST:PORT, e.g. http://127.0.0.1:8642\n");
  EXPECT_EQ(fake_.Calls(), std::vector<std::string>{"Jobs alice all=0 after=0 limit=1000"});
}

TEST_F(ClientTest, MissingTransportPluginIsAClearError) {
  const std::string missing = dir_ + "/no-such-plugin.so";
  Outcome r = Tessel({"jobs"}, {{"TESSEL_SERVER", url_}, {"TESSEL_TOKEN", kAlice}, {"TESSEL_HTTP_PLUGIN", missing}});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err.rfind("error: cannot load the HTTP transport " + missing + ": ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("No such file"), std::string::npos) << r.err;
  // A shared object that is not the plugin.
  r = Tessel({"jobs"}, {{"TESSEL_SERVER", url_}, {"TESSEL_TOKEN", kAlice}, {"TESSEL_HTTP_PLUGIN", TESSEL_HTTP_PLUGIN_OTHER}});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no tessel_http_transport entry point"), std::string::npos) << r.err;
}

TEST_F(ClientTest, ConnectionRefused) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);  // bound, never listened: the port refuses
  std::string url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  Outcome r = Tessel({"jobs"}, {{"TESSEL_SERVER", url}, {"TESSEL_TOKEN", kAlice}});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "error: cannot reach tessel server at " + url + ": connection refused\n");
}

TEST_F(ClientTest, LoadtestReportsEveryKind) {
  Outcome r = As(kAlice, {"loadtest", "--spec", "jobs/a.yaml", "--submissions", "20", "--queries", "45",
                      "--lists", "5", "--concurrency", "3", "--cancel", "--json"});
  EXPECT_EQ(r.code, 0) << r.err << r.out;
  json j = json::parse(r.out);
  ASSERT_EQ(j["kinds"].size(), 4u);
  std::vector<std::pair<std::string, int>> expected = {{"submit", 20}, {"get job", 45}, {"list jobs", 5}, {"cancel", 20}};
  for (size_t k = 0; k < expected.size(); ++k) {
    EXPECT_EQ(j["kinds"][k]["kind"], expected[k].first);
    EXPECT_EQ(j["kinds"][k]["requests"], expected[k].second);
  }
  for (const auto& k : j["kinds"]) {
    EXPECT_EQ(k["errors"], 0);
    EXPECT_GE(k["max_ms"].get<double>(), k["p50_ms"].get<double>());
  }
  Outcome bad = As("wrong-token-0123456789", {"loadtest", "--spec", "jobs/a.yaml", "--submissions", "4", "--queries",
                                          "4", "--lists", "4", "--concurrency", "2"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("errors (submit): HTTP 401 x4\n"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("errors (list jobs): HTTP 401 x4\n"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("no job was submitted: no status queries\n"), std::string::npos) << bad.out;
  EXPECT_EQ(bad.out.find("get job"), std::string::npos) << bad.out;
}

TEST_F(ClientTest, LoadtestSoakMixesEveryKindAndReportsTheDaemonsFigures) {
  Outcome r = As(kAlice, {"loadtest", "--spec", "jobs/a.yaml", "--duration", "1.5", "--sample-every", "0.5",
                      "--concurrency", "2", "--json"});
  EXPECT_EQ(r.code, 0) << r.err << r.out;
  json j = json::parse(r.out);
  std::vector<std::string> kinds;
  for (const auto& k : j["kinds"]) {
    kinds.push_back(k["kind"]);
    EXPECT_EQ(k["errors"], 0) << k.dump();
    EXPECT_GT(k["requests"].get<int>(), 0) << k.dump();
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"submit", "get job", "list jobs", "cancel", "metrics", "healthz"}));
  // The server runs in this test process: its figures are this process's.
  const json& d = j["daemon"];
  EXPECT_GT(d["start"]["resident_bytes"].get<int64_t>(), 0);
  EXPECT_GT(d["end"]["open_fds"].get<int64_t>(), 0);
  EXPECT_GE(d["peak"]["resident_bytes"].get<int64_t>(), d["end"]["resident_bytes"].get<int64_t>());
  EXPECT_GE(d["samples"].size(), 3u);  // start, at least one in between, end
  EXPECT_GE(j["duration_s"].get<double>(), 1.5);

  Outcome no_spec = As(kAlice, {"loadtest", "--duration", "1"});
  EXPECT_EQ(no_spec.code, 2);
  EXPECT_NE(no_spec.err.find("--spec FILE is required"), std::string::npos) << no_spec.err;
}

}  // namespace
}  // namespace tessel
