// The HTTP API end to end on 127.0.0.1 (a free port) against a fake
// JobService that records its calls: authentication, routing, codes, JSON
// shapes, limits, metrics and the access log.
#include "server/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "server/api.h"
#include "server/api_client.h"
#include "server/metrics.h"
#include "testing/fake_job_service.h"

namespace tessel {
namespace {

using nlohmann::json;

const std::string kAlice = "alice-token-0123456789";
const std::string kBob = "bob-token-0123456789ab";
const std::string kRoot = "root-token-0123456789ab";

class HttpApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto tokens = TokenStore::Parse(kAlice + " alice\n" + kBob + " bob\n" + kRoot + " root admin\n", "test");
    ASSERT_TRUE(tokens.ok()) << tokens.status().ToString();
    tokens_ = std::move(*tokens);
    server_ = std::make_unique<HttpServer>(fake_, tokens_, HttpServerOptions{}, [this](const AccessLogEntry& e) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_.push_back(FormatAccessLog(e));
    });
    Status st = server_->Start("127.0.0.1:0");
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_GT(server_->port(), 0);
    url_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }
  void TearDown() override { server_->Stop(); }

  HttpReply Send(const std::string& token, const std::string& method, const std::string& path,
                 const std::string& body = "", const std::string& content_type = "application/json") {
    auto client = ApiClient::Create(url_, token);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    auto reply = client->Send(method, path, body, content_type);
    EXPECT_TRUE(reply.ok()) << reply.status().ToString();
    return reply.ok() ? *reply : HttpReply{};
  }
  json Body(const HttpReply& r) { return json::parse(r.body); }
  std::string Error(const HttpReply& r) {
    json j = json::parse(r.body, nullptr, false);
    return j.is_object() && j.contains("error") ? j["error"].get<std::string>() : "<no error field: " + r.body + ">";
  }
  std::string SubmitBody(const std::string& spec = "name: a\ngpus: 8\n") {
    return json{{"spec_yaml", spec}, {"file", "jobs/a.yaml"}, {"base_dir", "/abs/dir"}}.dump();
  }
  int64_t Submit(const std::string& token) {
    HttpReply r = Send(token, "POST", "/v1/jobs", SubmitBody());
    EXPECT_EQ(r.code, 201) << r.body;
    return Body(r)["id"].get<int64_t>();
  }
  std::vector<std::string> Log() {
    std::lock_guard<std::mutex> lock(log_mu_);
    return log_;
  }

  testing::FakeJobService fake_;
  TokenStore tokens_;
  std::unique_ptr<HttpServer> server_;
  std::string url_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

// A raw HTTP/1.1 exchange (for what the client library will not send);
// the request should carry "Connection: close" so the reply ends at EOF.
std::string RawExchange(int port, const std::string& request) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return "<connect failed>";
  }
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  size_t sent = 0;
  while (sent < request.size()) {
    ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  std::string reply;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return reply;
}

TEST_F(HttpApiTest, HealthzNeedsNoToken) {
  HttpReply r = Send("", "GET", "/healthz");
  EXPECT_EQ(r.code, 200);
  EXPECT_EQ(r.Header("Content-Type"), "application/json");
  EXPECT_EQ(Body(r), json({{"status", "ok"}, {"slurm", "reachable"}}));
  HttpReply head = Send("", "HEAD", "/healthz");
  EXPECT_EQ(head.code, 200);
  EXPECT_TRUE(head.body.empty());
  EXPECT_TRUE(fake_.Calls().empty());
}

// Slurm unreachable: the API still answers; /healthz and /metrics say so.
TEST_F(HttpApiTest, HealthzAndMetricsSayWhenSlurmIsUnreachable) {
  fake_.health = ServiceHealth{false, 1'700'000'000'000'000, "squeue: Unable to contact slurm controller"};
  HttpReply r = Send("", "GET", "/healthz");
  EXPECT_EQ(r.code, 200) << "the daemon itself is up";
  EXPECT_EQ(Body(r), json({{"status", "degraded"},
                           {"slurm", "unreachable"},
                           {"slurm_error", "squeue: Unable to contact slurm controller"},
                           {"slurm_unreachable_since_us", 1'700'000'000'000'000}}));
  HttpReply m = Send(kAlice, "GET", "/metrics");
  EXPECT_NE(m.body.find("\ntessel_slurm_reachable 0\n"), std::string::npos) << m.body;
  fake_.health = ServiceHealth{};
  EXPECT_NE(Send(kAlice, "GET", "/metrics").body.find("\ntessel_slurm_reachable 1\n"), std::string::npos);
}

TEST_F(HttpApiTest, EveryOtherRouteNeedsAKnownTokenAndTheServiceIsNotCalled) {
  struct Req {
    std::string method, path, body;
  };
  const std::vector<Req> reqs = {{"GET", "/v1/jobs", ""},          {"GET", "/v1/jobs?all=true", ""},
                                 {"POST", "/v1/jobs", SubmitBody()}, {"GET", "/v1/jobs/1", ""},
                                 {"POST", "/v1/jobs/1/cancel", ""},  {"DELETE", "/v1/jobs/1", ""},
                                 {"GET", "/v1/nodes", ""},           {"GET", "/metrics", ""}};
  for (const Req& q : reqs) {
    for (const std::string& token : {std::string(""), std::string("wrong-token-0123456789"), kAlice + "x"}) {
      SCOPED_TRACE(q.method + " " + q.path + " token='" + token + "'");
      HttpReply r = Send(token, q.method, q.path, q.body);
      EXPECT_EQ(r.code, 401);
      EXPECT_EQ(r.Header("WWW-Authenticate").rfind("Bearer", 0), 0u) << r.Header("WWW-Authenticate");
      EXPECT_EQ(r.Header("Content-Type"), "application/json");
      EXPECT_EQ(Error(r), token.empty() ? "missing bearer token: send 'Authorization: Bearer TOKEN'" : "invalid token");
    }
  }
  EXPECT_TRUE(fake_.Calls().empty()) << fake_.Calls().front();
}

TEST_F(HttpApiTest, TokensNeverReachTheAccessLog) {
  Send(kAlice, "GET", "/v1/jobs?all=true");
  Send("wrong-token-0123456789", "GET", "/v1/jobs");
  Send("", "GET", "/nope");
  std::vector<std::string> log = Log();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0].rfind("GET /v1/jobs 200 ", 0), 0u) << log[0];
  EXPECT_NE(log[0].find(" user=alice from=127.0.0.1:"), std::string::npos) << log[0];
  EXPECT_EQ(log[1].rfind("GET /v1/jobs 401 ", 0), 0u) << log[1];
  EXPECT_NE(log[1].find(" user=- "), std::string::npos) << log[1];
  EXPECT_EQ(log[2].rfind("GET /nope 404 ", 0), 0u) << log[2];
  for (const std::string& line : log) {
    EXPECT_EQ(line.find(kAlice), std::string::npos) << line;
    EXPECT_EQ(line.find("wrong-token"), std::string::npos) << line;
    EXPECT_EQ(line.find("all=true"), std::string::npos) << line;
  }
}

TEST_F(HttpApiTest, SubmitCreatesAJob) {
  HttpReply r = Send(kAlice, "POST", "/v1/jobs", SubmitBody("name: train\n"));
  EXPECT_EQ(r.code, 201) << r.body;
  EXPECT_EQ(Body(r), json({{"id", 1}}));
  EXPECT_EQ(r.Header("Location"), "/v1/jobs/1");
  EXPECT_EQ(fake_.Calls(), std::vector<std::string>{"Submit alice admin=0 file=jobs/a.yaml base_dir=/abs/dir"});
  EXPECT_EQ(fake_.SubmittedSpecs(), std::vector<std::string>{"name: train\n"});
}

TEST_F(HttpApiTest, SubmitOfAnInvalidSpecReturnsTheFieldErrors) {
  HttpReply r = Send(kAlice, "POST", "/v1/jobs", SubmitBody("invalid: true\n"));
  EXPECT_EQ(r.code, 400);
  EXPECT_EQ(Error(r),
            "jobs/a.yaml:2: gpus: must be a positive integer, got 0\n"
            "jobs/a.yaml:3: model: unknown model 'gpt-9'; known: gpt-1.7b, llama2-7b");
  EXPECT_TRUE(fake_.SubmittedSpecs().empty());
  EXPECT_EQ(Body(Send(kAlice, "GET", "/v1/jobs?all=true")), json::array());
}

struct BadBody {
  const char* name;
  std::string body;
  std::string error;
};

class HttpApiBadBody : public HttpApiTest, public ::testing::WithParamInterface<BadBody> {};

TEST_P(HttpApiBadBody, Is400NamingTheField) {
  HttpReply r = Send(kAlice, "POST", "/v1/jobs", GetParam().body);
  EXPECT_EQ(r.code, 400);
  EXPECT_EQ(Error(r), GetParam().error);
  EXPECT_TRUE(fake_.Calls().empty());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HttpApiBadBody,
    ::testing::Values(
        BadBody{"not_json", "{\"spec_yaml\": ",
                "request body is not valid JSON; expected {\"spec_yaml\": \"...\", \"file\": \"...\", \"base_dir\": "
                "\"/...\"}"},
        BadBody{"empty", "",
                "request body is not valid JSON; expected {\"spec_yaml\": \"...\", \"file\": \"...\", \"base_dir\": "
                "\"/...\"}"},
        BadBody{"array", "[1, 2]", "request body must be a JSON object, got an array"},
        BadBody{"missing_spec", R"({"file": "a.yaml", "base_dir": "/d"})",
                "spec_yaml: required (the job spec's YAML text)"},
        BadBody{"missing_all", "{}",
                "spec_yaml: required (the job spec's YAML text)\n"
                "file: required (the spec's file name, for messages)\n"
                "base_dir: required (the absolute path of the spec's folder)"},
        BadBody{"spec_not_string", R"({"spec_yaml": 3, "file": "a.yaml", "base_dir": "/d"})",
                "spec_yaml: must be a string, got a number"},
        BadBody{"file_null", R"({"spec_yaml": "x", "file": null, "base_dir": "/d"})",
                "file: must be a string, got null"},
        BadBody{"file_empty", R"({"spec_yaml": "x", "file": "", "base_dir": "/d"})", "file: must not be empty"},
        BadBody{"relative_dir", R"({"spec_yaml": "x", "file": "a.yaml", "base_dir": "jobs"})",
                "base_dir: must be an absolute path (starting with '/')"},
        BadBody{"unknown_field", R"({"spec_yaml": "x", "file": "a.yaml", "base_dir": "/d", "spec": "y"})",
                "unknown field 'spec'; known: spec_yaml, file, base_dir"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(HttpApiTest, HugeBodyIs413AndTheConnectionStaysUsable) {
  std::string huge = json{{"spec_yaml", std::string(2 << 20, 'x')}, {"file", "a.yaml"}, {"base_dir", "/d"}}.dump();
  auto client = ApiClient::Create(url_, kAlice, ApiClientOptions{.keep_alive = true});
  ASSERT_TRUE(client.ok());
  auto r = client->Send("POST", "/v1/jobs", huge);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->code, 413);
  EXPECT_EQ(Error(*r), "request body too large; at most 1048576 bytes");
  EXPECT_TRUE(fake_.Calls().empty());
  auto again = client->Send("POST", "/v1/jobs", SubmitBody());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->code, 201);
}

TEST_F(HttpApiTest, ChunkedBodiesAreReadWithinTheLimit) {
  std::string body = SubmitBody();
  char size[16];
  std::snprintf(size, sizeof size, "%zx", body.size());
  std::string reply = RawExchange(server_->port(), "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                                                       kAlice +
                                                       "\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
                                                       size + "\r\n" + body + "\r\n0\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 201", 0), 0u) << reply;

  std::string chunk(64 << 10, 'x');
  std::snprintf(size, sizeof size, "%zx", chunk.size());
  std::string request = "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + kAlice +
                        "\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
  for (int i = 0; i < 20; ++i) request += std::string(size) + "\r\n" + chunk + "\r\n";  // 1.25 MiB
  request += "0\r\n\r\n";
  reply = RawExchange(server_->port(), request);
  EXPECT_EQ(reply.rfind("HTTP/1.1 413", 0), 0u) << reply.substr(0, 200);
  EXPECT_EQ(fake_.Calls().size(), 1u);
}

TEST_F(HttpApiTest, UsersSeeAndCancelOnlyTheirOwnJobs) {
  int64_t a = Submit(kAlice);
  int64_t b = Submit(kBob);
  HttpReply bob_reads = Send(kBob, "GET", "/v1/jobs/" + std::to_string(a));
  EXPECT_EQ(bob_reads.code, 403);
  EXPECT_EQ(Error(bob_reads), "job 1 belongs to another user");
  EXPECT_EQ(Send(kBob, "POST", "/v1/jobs/" + std::to_string(a) + "/cancel").code, 403);
  EXPECT_EQ(Send(kBob, "DELETE", "/v1/jobs/" + std::to_string(a)).code, 403);
  json bobs = Body(Send(kBob, "GET", "/v1/jobs"));
  ASSERT_EQ(bobs.size(), 1u);
  EXPECT_EQ(bobs[0]["id"], b);
  EXPECT_EQ(Body(Send(kRoot, "GET", "/v1/jobs")).size(), 2u);  // admin sees all

  HttpReply missing = Send(kAlice, "GET", "/v1/jobs/999");
  EXPECT_EQ(missing.code, 404);
  EXPECT_EQ(Error(missing), "no job 999");

  HttpReply cancel = Send(kAlice, "POST", "/v1/jobs/" + std::to_string(a) + "/cancel");
  EXPECT_EQ(cancel.code, 200);
  EXPECT_EQ(Body(cancel), json({{"id", a}, {"state", "cancelled"}}));
  HttpReply twice = Send(kAlice, "DELETE", "/v1/jobs/" + std::to_string(a));
  EXPECT_EQ(twice.code, 409);
  EXPECT_EQ(Error(twice), "job 1 is already cancelled");
  EXPECT_EQ(Body(Send(kRoot, "DELETE", "/v1/jobs/" + std::to_string(b))), json({{"id", b}, {"state", "cancelled"}}));
  EXPECT_EQ(Body(Send(kAlice, "GET", "/v1/jobs")), json::array());  // terminal ones only with all
  EXPECT_EQ(Body(Send(kAlice, "GET", "/v1/jobs?all=true")).size(), 1u);
}

TEST_F(HttpApiTest, BadIdsAre400AndTheServiceIsNotCalled) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"abc", "job id 'abc': must be a positive integer"},
      {"0", "job id '0': must be a positive integer"},
      {"-1", "job id '-1': must be a positive integer"},
      {"1.5", "job id '1.5': must be a positive integer"},
      {"99999999999999999999", "job id '99999999999999999999': out of range (at most 9223372036854775807)"}};
  for (const auto& [id, error] : cases) {
    for (const auto& [method, suffix] : std::vector<std::pair<std::string, std::string>>{
             {"GET", ""}, {"DELETE", ""}, {"POST", "/cancel"}}) {
      HttpReply r = Send(kAlice, method, "/v1/jobs/" + id + suffix);
      EXPECT_EQ(r.code, 400) << method << " " << id;
      EXPECT_EQ(Error(r), error);
    }
  }
  EXPECT_TRUE(fake_.Calls().empty());
}

TEST_F(HttpApiTest, UnknownRoutes404WrongMethods405) {
  // ("/" is the dashboard: DashboardFilesNeedNoTokenAndCarryTheirPolicy.)
  for (const std::string path : {"/index.htm", "/v1", "/v2/jobs", "/v1/jobs/1/cancel/x", "/v1/jobs/1/stop", "/v1/jobs/"}) {
    HttpReply r = Send(kAlice, "GET", path);
    EXPECT_EQ(r.code, 404) << path;
    EXPECT_EQ(Error(r), "no such route: " + path);
  }
  HttpReply put = Send(kAlice, "PUT", "/v1/jobs", SubmitBody());
  EXPECT_EQ(put.code, 405);
  EXPECT_EQ(put.Header("Allow"), "GET, POST");
  EXPECT_EQ(Error(put), "method PUT not allowed on /v1/jobs; allowed: GET, POST");
  HttpReply get_cancel = Send(kAlice, "GET", "/v1/jobs/1/cancel");
  EXPECT_EQ(get_cancel.code, 405);
  EXPECT_EQ(get_cancel.Header("Allow"), "POST");
  EXPECT_EQ(Send("", "POST", "/healthz").code, 405);
  EXPECT_EQ(Send(kAlice, "DELETE", "/v1/nodes").code, 405);
  EXPECT_TRUE(fake_.Calls().empty());
}

TEST_F(HttpApiTest, QueryParameters) {
  EXPECT_EQ(Send(kAlice, "GET", "/v1/jobs?all=true").code, 200);
  EXPECT_EQ(Send(kAlice, "GET", "/v1/jobs?all=0").code, 200);
  EXPECT_EQ(Send(kAlice, "GET", "/v1/jobs?all").code, 200);
  EXPECT_EQ(fake_.Calls(), (std::vector<std::string>{"Jobs alice all=1", "Jobs alice all=0", "Jobs alice all=1"}));
  HttpReply bad = Send(kAlice, "GET", "/v1/jobs?all=maybe");
  EXPECT_EQ(bad.code, 400);
  EXPECT_EQ(Error(bad), "all: must be true or false, got 'maybe'");
  HttpReply typo = Send(kAlice, "GET", "/v1/jobs?al=true");
  EXPECT_EQ(typo.code, 400);
  EXPECT_EQ(Error(typo), "unknown query parameter 'al'; known: all, limit, after");
  EXPECT_EQ(Error(Send(kAlice, "GET", "/v1/nodes?x=1")), "unknown query parameter 'x'; this route takes none");
  EXPECT_EQ(Error(Send(kAlice, "GET", "/v1/jobs?limit=0")), "limit: must be an integer from 1 to 1000, got '0'");
  EXPECT_EQ(Error(Send(kAlice, "GET", "/v1/jobs?limit=1001")), "limit: must be an integer from 1 to 1000, got '1001'");
  EXPECT_EQ(Error(Send(kAlice, "GET", "/v1/jobs?after=-1")), "after: must be a job id (an integer >= 0), got '-1'");
  EXPECT_EQ(Error(Send(kAlice, "GET", "/v1/jobs/1?limit=5")), "unknown query parameter 'limit'; known: steps");
  EXPECT_EQ(Error(Send(kAlice, "GET", "/v1/jobs/1?steps=0")), "steps: must be an integer from 1 to 5000, got '0'");
  EXPECT_EQ(Error(Send(kAlice, "GET", "/v1/jobs/1?steps=5001")), "steps: must be an integer from 1 to 5000, got '5001'");
  EXPECT_EQ(Error(Send(kAlice, "GET", "/v1/jobs?steps=5")), "unknown query parameter 'steps'; known: all, limit, after");
  EXPECT_EQ(fake_.Calls().size(), 3u);
}

// GET /v1/jobs pages by id: `limit` jobs (100 by default) after `after`,
// and a Link header to the next page when the page is full.
TEST_F(HttpApiTest, JobListsArePagedWithALinkToTheNextPage) {
  std::vector<int64_t> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(Submit(kAlice));
  HttpReply first = Send(kAlice, "GET", "/v1/jobs?limit=2");
  ASSERT_EQ(first.code, 200);
  ASSERT_EQ(Body(first).size(), 2u);
  EXPECT_EQ(Body(first)[1]["id"], ids[1]);
  EXPECT_EQ(first.Header("Link"), "</v1/jobs?limit=2&after=" + std::to_string(ids[1]) + ">; rel=\"next\"");
  HttpReply last = Send(kAlice, "GET", "/v1/jobs?all=true&limit=2&after=" + std::to_string(ids[3]));
  ASSERT_EQ(Body(last).size(), 1u);
  EXPECT_EQ(Body(last)[0]["id"], ids[4]);
  EXPECT_EQ(last.Header("Link"), "") << "not a full page: nothing after it";
  HttpReply whole = Send(kAlice, "GET", "/v1/jobs");
  EXPECT_EQ(Body(whole).size(), 5u) << "the default page holds 100";
  EXPECT_EQ(whole.Header("Link"), "");
}

TEST_F(HttpApiTest, ServiceErrorsMapToCodes) {
  fake_.nodes_unavailable = true;
  HttpReply r = Send(kAlice, "GET", "/v1/nodes");
  EXPECT_EQ(r.code, 503);
  EXPECT_EQ(Error(r), "slurm: sinfo failed: connection refused");
  EXPECT_EQ(r.Header("Retry-After"), "5");
}

TEST_F(HttpApiTest, JsonShapes) {
  JobDetail d;
  d.job.name = "train-gpt";
  d.job.user = "alice";
  d.job.state = "running";
  d.job.gpu_type = "a100-80g";
  d.job.gpus = 16;
  d.job.nodes = {"node1", "node2"};
  d.job.plan = "dp=2 tp=8 pp=1 mb=4";
  d.job.restarts = 1;
  d.job.submitted_us = 1714564803'250000;
  d.job.started_us = 1714564863'000000;
  d.job.reason = "started";
  d.plan_json = R"({"dp": 2, "tp": 8})";
  d.spec_yaml = "name: train-gpt\n";
  d.failures = 1;
  d.launches = 2;
  d.slurm_job_id = "4242";
  d.history = {{1714564803'000000, "", "pending", "submitted"}, {1714564863'000000, "pending", "running", "started"}};
  d.steps = {{1714564900'000000, 99, 0.8, "a100-80g", 16, false, std::nullopt},
             {1714564900'000000, 100, 0.75, "a100-80g", 16, false, 3.5}};
  d.corrections = {{"a100-80g", 1.125, 12, ""}, {"a100-80g", 1.25, 0, "stages=2"}};
  int64_t id = fake_.AddJob(d);
  JobDetail p;
  p.job.user = "alice";
  p.job.name = "waiting";
  p.job.state = "pending";
  fake_.AddJob(p);

  // ordered_json keeps the keys in the order they were sent.
  nlohmann::ordered_json jobs = nlohmann::ordered_json::parse(Send(kAlice, "GET", "/v1/jobs").body);
  ASSERT_EQ(jobs.size(), 2u);
  std::vector<std::string> keys;
  for (const auto& [k, v] : jobs[0].items()) keys.push_back(k);
  const std::vector<std::string> kJobKeys = {"id",      "name",     "user",      "state",   "gpu_type",
                                             "gpus",    "nodes",    "plan",      "restarts", "submitted",
                                             "started", "finished", "reason", "deadline", "iterations"};
  EXPECT_EQ(keys, kJobKeys);  // in this order
  EXPECT_EQ(json::parse(jobs[0].dump()), json::parse(R"({"id": 1, "name": "train-gpt", "user": "alice", "state": "running",
      "gpu_type": "a100-80g", "gpus": 16, "nodes": ["node1", "node2"], "plan": "dp=2 tp=8 pp=1 mb=4",
      "restarts": 1, "submitted": "2024-05-01T12:00:03Z", "started": "2024-05-01T12:01:03Z", "finished": null,
      "reason": "started", "deadline": null, "iterations": 0})"));
  EXPECT_EQ(jobs[1]["gpu_type"], nullptr);
  EXPECT_EQ(jobs[1]["plan"], nullptr);
  EXPECT_TRUE(jobs[1]["nodes"].is_array() && jobs[1]["nodes"].empty());
  EXPECT_EQ(jobs[1]["started"], nullptr);

  std::string detail_text = Send(kAlice, "GET", "/v1/jobs/" + std::to_string(id)).body;
  keys.clear();
  nlohmann::ordered_json ordered_detail = nlohmann::ordered_json::parse(detail_text);
  for (const auto& [k, v] : ordered_detail.items()) keys.push_back(k);
  json detail = json::parse(detail_text);
  std::vector<std::string> kDetailKeys = kJobKeys;
  for (const char* k : {"history", "steps", "corrections", "plan_json", "spec_yaml", "failures", "launches",
                        "slurm_job_id"})
    kDetailKeys.push_back(k);
  EXPECT_EQ(keys, kDetailKeys);
  EXPECT_EQ(detail["history"], json::parse(R"([
      {"time": "2024-05-01T12:00:03Z", "from": null, "to": "pending", "reason": "submitted"},
      {"time": "2024-05-01T12:01:03Z", "from": "pending", "to": "running", "reason": "started"}])"));
  EXPECT_EQ(detail["steps"], json::parse(R"([{"time": "2024-05-01T12:01:40Z", "step": 99, "step_time_s": 0.8,
      "gpu_type": "a100-80g", "gpus": 16, "profile": false, "loss": null},
      {"time": "2024-05-01T12:01:40Z", "step": 100, "step_time_s": 0.75,
      "gpu_type": "a100-80g", "gpus": 16, "profile": false, "loss": 3.5}])"));
  // ?steps=N: the latest N.
  json latest = Body(Send(kAlice, "GET", "/v1/jobs/" + std::to_string(id) + "?steps=1"));
  ASSERT_EQ(latest["steps"].size(), 1u);
  EXPECT_EQ(latest["steps"][0]["step"], 100);
  EXPECT_EQ(detail["corrections"], json::parse(R"([{"gpu_type": "a100-80g", "scope": "", "factor": 1.125, "samples": 12},
      {"gpu_type": "a100-80g", "scope": "stages=2", "factor": 1.25, "samples": 0}])"));
  EXPECT_EQ(detail["plan_json"], json::parse(R"({"dp": 2, "tp": 8})"));
  EXPECT_EQ(detail["spec_yaml"], "name: train-gpt\n");
  EXPECT_EQ(detail["failures"], 1);
  EXPECT_EQ(detail["launches"], 2);
  EXPECT_EQ(detail["slurm_job_id"], "4242");
  json pending = Body(Send(kAlice, "GET", "/v1/jobs/2"));
  EXPECT_EQ(pending["plan_json"], nullptr);
  EXPECT_EQ(pending["slurm_job_id"], nullptr);

  json nodes = Body(Send(kAlice, "GET", "/v1/nodes"));
  EXPECT_EQ(nodes, json::parse(R"([
      {"name": "node1", "gpu_type": "a100-80g", "gres_type": "a100", "gpus": 8, "gpus_used": 6, "gpus_free": 2,
       "state": "mixed"},
      {"name": "node2", "gpu_type": "h100-sxm", "gres_type": "h100", "gpus": 4, "gpus_used": 0, "gpus_free": 4,
       "state": "idle"}])"));
}

TEST_F(HttpApiTest, MetricsParseAndCountRequestsByCode) {
  Send("", "GET", "/v1/jobs");        // 401
  Send("bad-token-0123456789", "GET", "/v1/jobs");  // 401
  Send(kAlice, "GET", "/nope");       // 404
  Send(kAlice, "GET", "/v1/jobs");    // 200
  Send("", "GET", "/healthz");        // 200
  HttpReply r = Send(kAlice, "GET", "/metrics");
  ASSERT_EQ(r.code, 200);
  EXPECT_EQ(r.Header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  const std::regex sample(R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\["\\n])*"\})? \S+$)");
  std::map<std::string, std::string> samples;
  std::set<std::string> typed;
  std::istringstream in(r.body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      typed.insert(line.substr(7, line.find(' ', 7) - 7));
      continue;
    }
    if (line.rfind("# HELP ", 0) == 0) continue;
    ASSERT_TRUE(std::regex_match(line, sample)) << line;
    size_t sp = line.rfind(' ');
    samples[line.substr(0, sp)] = line.substr(sp + 1);
  }
  for (const char* family : {"tessel_queue_length", "tessel_jobs", "tessel_gpus_allocated", "tessel_decisions_total",
                             "tessel_decision_seconds", "tessel_last_decision_seconds", "tessel_restarts_total",
                             "tessel_failures_total", "tessel_slurm_reachable", "tessel_api_requests_total"})
    EXPECT_TRUE(typed.count(family)) << family;
  EXPECT_EQ(samples["tessel_queue_length"], "2");
  EXPECT_EQ(samples["tessel_jobs{state=\"running\"}"], "1");
  EXPECT_EQ(samples["tessel_jobs{state=\"weird\\\"state\\\\x\\n\"}"], "0");  // escaped
  EXPECT_EQ(samples["tessel_gpus_allocated{gpu_type=\"a100-80g\"}"], "6");
  EXPECT_EQ(samples["tessel_decisions_total"], "4");
  EXPECT_EQ(samples["tessel_decision_seconds_sum"], "0.25");
  EXPECT_EQ(samples["tessel_decision_seconds_count"], "4");
  EXPECT_EQ(samples["tessel_last_decision_seconds"], "0.0625");
  EXPECT_EQ(samples["tessel_restarts_total"], "1");
  EXPECT_EQ(samples["tessel_failures_total"], "0");
  EXPECT_EQ(samples["tessel_api_requests_total{code=\"401\"}"], "2");
  EXPECT_EQ(samples["tessel_api_requests_total{code=\"404\"}"], "1");
  EXPECT_EQ(samples["tessel_api_requests_total{code=\"200\"}"], "2");  // not this request itself
  // The process's own figures, as Prometheus's client libraries name them.
  for (const char* family : {"process_resident_memory_bytes", "process_virtual_memory_bytes", "process_open_fds",
                             "process_max_fds", "process_threads"}) {
    ASSERT_TRUE(typed.count(family)) << family;
    EXPECT_GT(std::stoll(samples[family]), 0) << family;
  }
  EXPECT_LE(std::stoll(samples["process_resident_memory_bytes"]), std::stoll(samples["process_virtual_memory_bytes"]));
  EXPECT_LT(std::stoll(samples["process_open_fds"]), std::stoll(samples["process_max_fds"]));
}

TEST(ProcessFiguresTest, OpenFdsFollowsTheDescriptorsThisProcessOpens) {
  const ProcessFigures before = ReadProcessFigures();
  ASSERT_GT(before.open_fds, 0);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  EXPECT_EQ(ReadProcessFigures().open_fds, before.open_fds + 2);
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_EQ(ReadProcessFigures().open_fds, before.open_fds);
}

TEST_F(HttpApiTest, KeepAliveConnectionServesManyRequests) {
  auto client = ApiClient::Create(url_, kAlice, ApiClientOptions{.keep_alive = true});
  ASSERT_TRUE(client.ok());
  for (int i = 0; i < 30; ++i) {
    auto r = client->Send("GET", "/v1/jobs");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->code, 200);
  }
}

TEST_F(HttpApiTest, GetWithChunkedBodyIsRefused) {
  std::string reply = RawExchange(server_->port(),
                                  "GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + kAlice +
                                      "\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 400", 0), 0u) << reply;
  EXPECT_NE(reply.find("a GET request takes no chunked body"), std::string::npos) << reply;
  EXPECT_TRUE(fake_.Calls().empty());
}

TEST(HttpServerStart, BindErrorsAreClear) {
  testing::FakeJobService fake;
  auto tokens = TokenStore::Parse(kAlice + " alice\n", "test");
  ASSERT_TRUE(tokens.ok());
  HttpServer first(fake, *tokens);
  ASSERT_TRUE(first.Start("127.0.0.1:0").ok());
  const std::string taken = "127.0.0.1:" + std::to_string(first.port());

  HttpServer second(fake, *tokens);
  Status in_use = second.Start(taken);
  EXPECT_EQ(in_use.code(), StatusCode::kUnavailable);
  EXPECT_EQ(in_use.message(), "cannot listen on " + taken +
                                  ": address already in use (another tessel serve? pick another port)");

  Status not_local = second.Start("192.0.2.1:8642");  // TEST-NET-1: never this machine's
  EXPECT_EQ(not_local.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(not_local.message(), "cannot listen on 192.0.2.1:8642: '192.0.2.1' is not an address of this machine");

  for (const std::string bad : {"8642", "localhost", ":8642", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:http",
                                 "::1:8642", "[::1:8642"}) {
    Status st = second.Start(bad);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("listen address '" + bad + "'"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("expected HOST:PORT, e.g. 127.0.0.1:8642"), std::string::npos) << st.message();
  }
  EXPECT_EQ(first.Start(taken).code(), StatusCode::kFailedPrecondition);
  first.Stop();
  first.Stop();  // idempotent
}

// The dashboard (server/dashboard.h): its files need no token, carry the
// Content-Security-Policy and nosniff, and the API behind them still does.
TEST_F(HttpApiTest, DashboardFilesNeedNoTokenAndCarryTheirPolicy) {
  const std::vector<std::pair<std::string, std::string>> files = {
      {"/", "text/html; charset=utf-8"},
      {"/index.html", "text/html; charset=utf-8"},
      {"/dashboard.js", "text/javascript; charset=utf-8"},
      {"/dashboard.css", "text/css; charset=utf-8"},
      {"/chart.js", "text/javascript; charset=utf-8"},
      {"/favicon.svg", "image/svg+xml"}};
  for (const auto& [path, type] : files) {
    HttpReply r = Send("", "GET", path);
    EXPECT_EQ(r.code, 200) << path;
    EXPECT_EQ(r.Header("Content-Type"), type) << path;
    EXPECT_FALSE(r.body.empty()) << path;
    const std::string csp = r.Header("Content-Security-Policy");
    EXPECT_NE(csp.find("default-src 'self'"), std::string::npos) << path << ": " << csp;
    EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
    EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
    EXPECT_EQ(csp.find("unsafe-eval"), std::string::npos) << csp;
    EXPECT_EQ(csp.find("http"), std::string::npos) << "no other origin: " << csp;
    EXPECT_NE(csp.find("form-action 'none'"), std::string::npos) << csp;
    EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << csp;
    EXPECT_EQ(r.Header("X-Content-Type-Options"), "nosniff") << path;
    EXPECT_EQ(r.Header("Referrer-Policy"), "no-referrer") << path;
  }
  EXPECT_TRUE(fake_.Calls().empty()) << "static files call no service";

  // The page: no inline script or style, everything from this origin.
  std::string html = Send("", "GET", "/").body;
  EXPECT_NE(html.find("<script src=\"/dashboard.js\" defer></script>"), std::string::npos);
  EXPECT_NE(html.find("<script src=\"/chart.js\" defer></script>"), std::string::npos);
  std::regex inline_script("<script(?![^>]*\\bsrc=)[^>]*>");
  EXPECT_FALSE(std::regex_search(html, inline_script)) << "an inline <script>";
  EXPECT_EQ(html.find("<style"), std::string::npos);
  EXPECT_EQ(html.find("style="), std::string::npos);
  std::regex handler("\\son[a-z]+=");
  EXPECT_FALSE(std::regex_search(html, handler)) << "an inline event handler";
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  // Chart.js is Debian's, as report.html embeds it.
  EXPECT_NE(Send("", "GET", "/chart.js").body.find("Chart.js v"), std::string::npos);
  // The script shows what users wrote as text only.
  std::string js = Send("", "GET", "/dashboard.js").body;
  EXPECT_EQ(js.find("innerHTML"), std::string::npos);
  EXPECT_EQ(js.find("outerHTML"), std::string::npos);
  EXPECT_EQ(js.find("insertAdjacentHTML"), std::string::npos);
  EXPECT_EQ(js.find("document.write"), std::string::npos);
  EXPECT_EQ(js.find("eval("), std::string::npos);
  EXPECT_EQ(js.find("localStorage"), std::string::npos) << "the token stays in sessionStorage";
  EXPECT_NE(js.find("sessionStorage"), std::string::npos);

  // Revalidation: the same file is a 304 without a body.
  HttpReply js_reply = Send("", "GET", "/chart.js");
  const std::string etag = js_reply.Header("ETag");
  ASSERT_EQ(etag.size(), 18u) << etag;
  EXPECT_NE(Send("", "GET", "/dashboard.js").Header("ETag"), etag);
  RequestCounter counter;
  Api api(fake_, tokens_, counter);
  ApiRequest again{"GET", "/chart.js", {}, "", ""};
  again.if_none_match = etag;
  ApiResponse not_modified = api.Handle(again);
  EXPECT_EQ(not_modified.code, 304);
  EXPECT_TRUE(not_modified.body.empty());
  again.if_none_match = "\"0000000000000000\"";
  EXPECT_EQ(api.Handle(again).code, 200);
  EXPECT_EQ(api.Handle(again).body, js_reply.body);

  // HEAD as GET; other methods 405; unknown files 404 (as JSON).
  HttpReply head = Send("", "HEAD", "/dashboard.css");
  EXPECT_EQ(head.code, 200);
  EXPECT_TRUE(head.body.empty());
  HttpReply post = Send("", "POST", "/", "{}");
  EXPECT_EQ(post.code, 405);
  EXPECT_EQ(post.Header("Allow"), "GET");
  EXPECT_EQ(Send("", "GET", "/dashboard.map").code, 404);
  EXPECT_EQ(Send("", "GET", "/favicon.ico").code, 404);

  // The data behind the page still needs a token.
  for (const char* path : {"/v1/jobs", "/v1/nodes", "/v1/me", "/v1/cluster/history", "/metrics"}) {
    HttpReply r = Send("", "GET", path);
    EXPECT_EQ(r.code, 401) << path;
    EXPECT_EQ(r.Header("X-Content-Type-Options"), "nosniff") << path;
    EXPECT_EQ(Send("wrong-token-0123456789", "GET", path).code, 401) << path;
  }
  HttpReply wrong = Send("wrong-token-0123456789", "GET", "/v1/me");
  EXPECT_EQ(Error(wrong), "invalid token");  // what the sign-in form shows
  EXPECT_TRUE(fake_.Calls().empty());
  HttpReply jobs = Send(kAlice, "GET", "/v1/jobs");
  EXPECT_EQ(jobs.code, 200);
  EXPECT_EQ(jobs.Header("Content-Type"), "application/json");
  EXPECT_EQ(jobs.Header("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(jobs.Header("Cache-Control"), "no-store");
  EXPECT_EQ(jobs.Header("Content-Security-Policy"), "");
}

TEST_F(HttpApiTest, MeSaysWhoTheTokenIs) {
  EXPECT_EQ(Body(Send(kAlice, "GET", "/v1/me")), json::parse(R"({"user": "alice", "admin": false})"));
  EXPECT_EQ(Body(Send(kRoot, "GET", "/v1/me")), json::parse(R"({"user": "root", "admin": true})"));
  EXPECT_EQ(Send(kAlice, "GET", "/v1/me?x=1").code, 400);
  EXPECT_EQ(Send(kAlice, "POST", "/v1/me", "{}").code, 405);
  EXPECT_TRUE(fake_.Calls().empty());
}

TEST_F(HttpApiTest, ClusterHistoryJson) {
  HttpReply r = Send(kBob, "GET", "/v1/cluster/history");
  ASSERT_EQ(r.code, 200) << r.body;
  nlohmann::ordered_json h = nlohmann::ordered_json::parse(r.body);
  std::vector<std::string> keys;
  for (const auto& [k, v] : h.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"interval_s", "gpu_types", "samples"}));
  EXPECT_EQ(json::parse(r.body), json::parse(R"({"interval_s": 10,
      "gpu_types": [{"name": "a100-80g", "gpus": 8}, {"name": "h100-sxm", "gpus": 4}],
      "samples": [{"time": "2024-05-01T12:00:00Z", "allocated": [0, 0]},
                  {"time": "2024-05-01T12:00:10Z", "allocated": [6, 0]},
                  {"time": "2024-05-01T12:00:15Z", "allocated": [6, 4]}]})"));
  EXPECT_EQ(fake_.Calls(), std::vector<std::string>{"ClusterHistory bob"});
  fake_.nodes_unavailable = true;
  EXPECT_EQ(Send(kBob, "GET", "/v1/cluster/history").code, 503);
  EXPECT_EQ(Send(kBob, "DELETE", "/v1/cluster/history").code, 405);
}

TEST_F(HttpApiTest, JobDeadlineAndIterations) {
  JobDetail d;
  d.job.user = "alice";
  d.job.name = "<img src=x onerror=alert(1)>";
  d.job.state = "pending";
  d.job.submitted_us = 1714564803'000000;
  d.job.deadline_us = 1714564803'000000 + 3600'000000LL;
  d.job.iterations = 150;
  int64_t id = fake_.AddJob(d);
  json jobs = Body(Send(kAlice, "GET", "/v1/jobs"));
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["deadline"], "2024-05-01T13:00:03Z");
  EXPECT_EQ(jobs[0]["iterations"], 150);
  EXPECT_EQ(jobs[0]["name"], "<img src=x onerror=alert(1)>");  // JSON, shown as text by the page
  json one = Body(Send(kAlice, "GET", "/v1/jobs/" + std::to_string(id)));
  EXPECT_EQ(one["deadline"], "2024-05-01T13:00:03Z");
}

}  // namespace
}  // namespace tessel
