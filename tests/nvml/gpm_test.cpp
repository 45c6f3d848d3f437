// GpmSampler against a scripted NVML (a function table of this file's own functions): two
// buffers allocated once and freed, alternated, the 100 ms floor, the metric request, MIG samples.
#include "nvml/gpm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace gw::nvml {
namespace {

// The fake library's state. A sample buffer holds the "counter" value it was filled with.
struct Fake {
  int allocs = 0, frees = 0, gets = 0, mig_gets = 0, metrics_calls = 0;
  double counter = 0;  // advanced by the test between samples
  unsigned last_instance = 0;
  nvmlReturn_t get_result = NVML_SUCCESS;
  std::set<double*> live;
  const void* last_sample1 = nullptr;
  const void* last_sample2 = nullptr;
} fake;

nvmlReturn_t Alloc(nvmlGpmSample_t* sample) {
  ++fake.allocs;
  auto* cell = new double(0);
  fake.live.insert(cell);
  *sample = reinterpret_cast<nvmlGpmSample_t>(cell);
  return NVML_SUCCESS;
}
nvmlReturn_t Free(nvmlGpmSample_t sample) {
  ++fake.frees;
  auto* cell = reinterpret_cast<double*>(sample);
  EXPECT_EQ(fake.live.erase(cell), 1u) << "freed a sample that was not allocated";
  delete cell;
  return NVML_SUCCESS;
}
nvmlReturn_t Get(nvmlDevice_t, nvmlGpmSample_t sample) {
  ++fake.gets;
  if (fake.get_result != NVML_SUCCESS) return fake.get_result;
  *reinterpret_cast<double*>(sample) = fake.counter;
  return NVML_SUCCESS;
}
nvmlReturn_t MigGet(nvmlDevice_t, unsigned gi, nvmlGpmSample_t sample) {
  ++fake.mig_gets;
  fake.last_instance = gi;
  *reinterpret_cast<double*>(sample) = fake.counter;
  return NVML_SUCCESS;
}
// Metric id k: (newer - older) * k, so the test can tell the order of the samples and the ids;
// id 99 is a metric this "GPU" cannot compute.
nvmlReturn_t Metrics(nvmlGpmMetricsGet_t* m) {
  ++fake.metrics_calls;
  if (m->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  fake.last_sample1 = m->sample1;
  fake.last_sample2 = m->sample2;
  const double older = *reinterpret_cast<double*>(m->sample1);
  const double newer = *reinterpret_cast<double*>(m->sample2);
  for (unsigned i = 0; i < m->numMetrics; ++i) {
    nvmlGpmMetric_t& metric = m->metrics[i];
    metric.nvmlReturn = metric.metricId == 99 ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
    metric.value = (newer - older) * metric.metricId;
  }
  return NVML_SUCCESS;
}

class GpmSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake = Fake{};
    api_.nvmlGpmSampleAlloc = Alloc;
    api_.nvmlGpmSampleFree = Free;
    api_.nvmlGpmSampleGet = Get;
    api_.nvmlGpmMigSampleGet = MigGet;
    api_.nvmlGpmMetricsGet = Metrics;
  }
  Device device() { return Device(&api_, reinterpret_cast<nvmlDevice_t>(0x1000)); }
  Api api_;
};

TEST_F(GpmSamplerTest, TwoBuffersOnceAlternatedAndFreed) {
  {
    GpmSampler sampler(device());
    EXPECT_FALSE(sampler.allocated());  // nothing before the first sample
    const unsigned ids[] = {2, 3, 99};
    double values[3];
    EXPECT_EQ(sampler.Metrics(ids, 3, values).status(), NVML_ERROR_NOT_READY);
    fake.counter = 10;
    auto first = sampler.Sample(0.0);
    ASSERT_TRUE(first.ok());
    EXPECT_FALSE(first.value());  // one sample: nothing to compute yet
    EXPECT_FALSE(sampler.ready());
    EXPECT_EQ(fake.allocs, 2);
    EXPECT_EQ(fake.metrics_calls, 0);
    std::set<const void*> buffers;
    for (int i = 1; i <= 20; ++i) {
      fake.counter = 10 + i * (i + 1) / 2.0;  // grows by i at sample i
      auto s = sampler.Sample(i * 1.0);
      ASSERT_TRUE(s.ok());
      EXPECT_TRUE(s.value());
      auto got = sampler.Metrics(ids, 3, values);
      ASSERT_TRUE(got.ok());
      EXPECT_EQ(got.value(), 2u);
      // The older sample first: (newer - older) = i, times the metric id.
      EXPECT_DOUBLE_EQ(values[0], 2.0 * i);
      EXPECT_DOUBLE_EQ(values[1], 3.0 * i);
      EXPECT_TRUE(std::isnan(values[2]));  // NOT_SUPPORTED for this one metric: absent
      EXPECT_NE(fake.last_sample1, fake.last_sample2);
      buffers.insert(fake.last_sample1);
      buffers.insert(fake.last_sample2);
    }
    EXPECT_EQ(buffers.size(), 2u);  // only ever the same two buffers
    EXPECT_EQ(fake.allocs, 2);      // allocated once
    EXPECT_EQ(fake.gets, 21);
    EXPECT_EQ(fake.frees, 0);
  }
  EXPECT_EQ(fake.frees, 2);  // the destructor frees both
  EXPECT_TRUE(fake.live.empty());
}

TEST_F(GpmSamplerTest, RefusesToSampleWithin100Ms) {
  GpmSampler sampler(device());
  ASSERT_TRUE(sampler.Sample(5.0).ok());
  EXPECT_FALSE(sampler.Due(5.05));
  auto early = sampler.Sample(5.05);
  EXPECT_EQ(early.status(), NVML_ERROR_NOT_READY);
  EXPECT_EQ(fake.gets, 1);  // no NVML call for the refused sample
  EXPECT_TRUE(sampler.Due(5.1));
  ASSERT_TRUE(sampler.Sample(5.1).ok());
  EXPECT_EQ(fake.gets, 2);
  EXPECT_TRUE(sampler.ready());
}

TEST_F(GpmSamplerTest, AFailedSampleKeepsTheNewerOne) {
  GpmSampler sampler(device());
  fake.counter = 1;
  ASSERT_TRUE(sampler.Sample(0).ok());
  fake.counter = 2;
  ASSERT_TRUE(sampler.Sample(1).ok());
  EXPECT_TRUE(sampler.ready());
  fake.get_result = NVML_ERROR_UNKNOWN;
  EXPECT_EQ(sampler.Sample(2).status(), NVML_ERROR_UNKNOWN);
  EXPECT_FALSE(sampler.ready());  // the older buffer was the target: it may be half written
  fake.get_result = NVML_SUCCESS;
  fake.counter = 6;
  ASSERT_TRUE(sampler.Sample(3).ok());
  ASSERT_TRUE(sampler.ready());
  const unsigned id = 1;
  double v = 0;
  ASSERT_TRUE(sampler.Metrics(&id, 1, &v).ok());
  EXPECT_DOUBLE_EQ(v, 4.0);  // 6 - 2: the sample of t = 1 was kept
}

TEST_F(GpmSamplerTest, MigInstanceUsesTheMigSampleCall) {
  GpmSampler sampler(device(), 3);
  ASSERT_TRUE(sampler.Sample(0).ok());
  ASSERT_TRUE(sampler.Sample(1).ok());
  EXPECT_EQ(fake.mig_gets, 2);
  EXPECT_EQ(fake.gets, 0);
  EXPECT_EQ(fake.last_instance, 3u);
}

TEST_F(GpmSamplerTest, MovedSamplerFreesOnce) {
  {
    GpmSampler a(device());
    ASSERT_TRUE(a.Sample(0).ok());
    GpmSampler b = std::move(a);
    EXPECT_TRUE(b.allocated());
    GpmSampler c;
    c = std::move(b);
    EXPECT_TRUE(c.allocated());
  }
  EXPECT_EQ(fake.allocs, 2);
  EXPECT_EQ(fake.frees, 2);
}

TEST_F(GpmSamplerTest, ALibraryWithoutGpmAnswersFunctionNotFound) {
  api_.nvmlGpmSampleGet = nullptr;
  api_.nvmlGpmMigSampleGet = nullptr;
  GpmSampler sampler(device());
  EXPECT_EQ(sampler.Sample(0).status(), NVML_ERROR_FUNCTION_NOT_FOUND);
  EXPECT_EQ(fake.allocs, 0);
  Device d = device();
  EXPECT_EQ(d.GpmSupported().status(), NVML_ERROR_FUNCTION_NOT_FOUND);
  EXPECT_TRUE(d.GpmSupported().unsupported());
}

}  // namespace
}  // namespace gw::nvml
