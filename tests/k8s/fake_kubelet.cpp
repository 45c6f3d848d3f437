// gw-fake-kubelet: a stand-in for the kubelet's pod-resources service (src/k8s/api.proto) on a
// unix socket, for the tests of the gRPC client and of the agent (tests/k8s/).
//
//   gw-fake-kubelet --socket PATH --state FILE
//
// Prints "ready" on stdout once it listens. Every request re-reads FILE, so a test moves pods by
// rewriting it (write a temporary file, then rename it over FILE):
//   {"pods": [{"namespace": "ml", "name": "train-0", "containers": [{"name": "main",
//      "devices": [{"resource": "nvidia.com/gpu", "ids": ["GPU-…"], "numa": [0]}]}]}],
//    "allocatable": [{"resource": "nvidia.com/gpu", "ids": ["GPU-…"], "numa": [0]}],
//    "delay_ms": 0,              sleep this long before answering (a slow kubelet)
//    "fail": "",                 non-empty: every call fails with UNAVAILABLE and this text
//    "allocatable_unimplemented": false,   GetAllocatableResources answers UNIMPLEMENTED (< 1.21)
//    "allocatable_disabled": false,        ... answers UNKNOWN "... disabled" (1.21-1.22, gate off)
//    "copies": 1}                List repeats "pods" this many times, 1 to 100000 (a huge or
//                                duplicated answer without a huge file)
// Every key is optional. A missing, unreadable or malformed FILE answers UNAVAILABLE with the
// reason. Get answers the named pod, or NOT_FOUND. SIGTERM or SIGINT: stop, remove the socket,
// exit 0. Usage errors exit 2; a socket that cannot be listened on exits 1.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "api.grpc.pb.h"
#include "api.pb.h"

namespace {

using nlohmann::json;

std::atomic<bool> g_stopping{false};

struct State {
  v1::ListPodResourcesResponse pods;
  v1::AllocatableResourcesResponse allocatable;
  long delay_ms = 0;
  std::string fail;
  bool allocatable_unimplemented = false;
  bool allocatable_disabled = false;
};

void FillDevices(const json& in, v1::ContainerDevices* out) {
  out->set_resource_name(in.value("resource", std::string()));
  for (const json& id : in.value("ids", json::array())) out->add_device_ids(id.get<std::string>());
  for (const json& node : in.value("numa", json::array()))
    out->mutable_topology()->add_nodes()->set_id(node.get<std::int64_t>());
}

// Reads and converts the state file; on failure, `error` says why.
bool LoadState(const std::string& path, State* state, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "state file " + path + ": cannot be read";
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  try {
    const json doc = json::parse(text.str());
    for (const json& pod_in : doc.value("pods", json::array())) {
      v1::PodResources* pod = state->pods.add_pod_resources();
      pod->set_namespace_(pod_in.value("namespace", std::string()));
      pod->set_name(pod_in.value("name", std::string()));
      for (const json& container_in : pod_in.value("containers", json::array())) {
        v1::ContainerResources* container = pod->add_containers();
        container->set_name(container_in.value("name", std::string()));
        for (const json& devices : container_in.value("devices", json::array()))
          FillDevices(devices, container->add_devices());
      }
    }
    const long copies = doc.value("copies", 1L);
    if (copies < 1 || copies > 100000) {
      *error = "state file " + path + ": copies must be 1 to 100000";
      return false;
    }
    const v1::ListPodResourcesResponse once = state->pods;
    for (long i = 1; i < copies; ++i) state->pods.MergeFrom(once);
    for (const json& devices : doc.value("allocatable", json::array()))
      FillDevices(devices, state->allocatable.add_devices());
    state->delay_ms = doc.value("delay_ms", 0L);
    state->fail = doc.value("fail", std::string());
    state->allocatable_unimplemented = doc.value("allocatable_unimplemented", false);
    state->allocatable_disabled = doc.value("allocatable_disabled", false);
  } catch (const json::exception& e) {
    *error = "state file " + path + ": " + e.what();
    return false;
  }
  return true;
}

class Lister final : public v1::PodResourcesLister::Service {
 public:
  explicit Lister(std::string state_path) : state_path_(std::move(state_path)) {}

  grpc::Status List(grpc::ServerContext* context, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* answer) override {
    State state;
    grpc::Status status = Prepare(context, &state);
    if (status.ok()) *answer = std::move(state.pods);
    return status;
  }

  grpc::Status GetAllocatableResources(grpc::ServerContext* context,
                                       const v1::AllocatableResourcesRequest*,
                                       v1::AllocatableResourcesResponse* answer) override {
    State state;
    grpc::Status status = Prepare(context, &state);
    if (!status.ok()) return status;
    if (state.allocatable_unimplemented)
      return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                          "method GetAllocatableResources not implemented");
    if (state.allocatable_disabled)  // what such a kubelet's Go code answers: a plain error
      return grpc::Status(grpc::StatusCode::UNKNOWN,
                          "Pod Resources API GetAllocatableResources disabled");
    *answer = std::move(state.allocatable);
    return status;
  }

  grpc::Status Get(grpc::ServerContext* context, const v1::GetPodResourcesRequest* request,
                   v1::GetPodResourcesResponse* answer) override {
    State state;
    grpc::Status status = Prepare(context, &state);
    if (!status.ok()) return status;
    for (const v1::PodResources& pod : state.pods.pod_resources()) {
      if (pod.name() == request->pod_name() && pod.namespace_() == request->pod_namespace()) {
        *answer->mutable_pod_resources() = pod;
        return status;
      }
    }
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "pod " + request->pod_namespace() + "/" +
                                                         request->pod_name() + " not found");
  }

 private:
  // What every call does first: read the state, wait delay_ms (cut short by the caller going
  // away or by shutdown), fail when told to.
  grpc::Status Prepare(grpc::ServerContext* context, State* state) {
    std::string error;
    if (!LoadState(state_path_, state, &error))
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, error);
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(state->delay_ms);
    while (std::chrono::steady_clock::now() < until && !context->IsCancelled() &&
           !g_stopping.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (!state->fail.empty()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, state->fail);
    return grpc::Status::OK;
  }

  std::string state_path_;
};

int Usage() {
  std::cerr << "usage: gw-fake-kubelet --socket PATH --state FILE\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string socket_path, state_path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return Usage();
    if (arg == "--socket") {
      socket_path = argv[++i];
    } else if (arg == "--state") {
      state_path = argv[++i];
    } else {
      return Usage();
    }
  }
  if (socket_path.empty() || state_path.empty()) return Usage();

  // The signals are taken by sigwait below; blocked before gRPC starts its threads, which
  // inherit the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Lister service(state_path);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + socket_path, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    std::cerr << "gw-fake-kubelet: cannot listen on " << socket_path << "\n";
    return 1;
  }
  std::cout << "ready" << std::endl;

  int signal = 0;
  sigwait(&signals, &signal);
  g_stopping = true;
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server->Wait();
  unlink(socket_path.c_str());
  return 0;
}
