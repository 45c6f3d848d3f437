// diagnose/training.h — internal: the training-throughput check, run after the device checks
// (docs/jobs.md, "Training throughput").
//
// A job's gpu_job_training_throughput (serve/training_service.h) that fell below
// (1 - kTrainingDropRatio) × its usual level (the 90th percentile of the window) for at least two
// steps, up to the latest such stretch, is a finding "training-throughput-drop" (layer task,
// subject job and team). Its cause is read from the GPUs the job held (gpu_allocation_info)
// during the drop, the slowest first: a GPU whose SM clock sat below 95 % of its maximum, named
// with its clock-event reason (power cap, thermal, power brake); else a GPU with NVLink links
// down; else a GPU at low utilization (below the busy_utilization threshold); else "not the
// GPUs". The title says it as a person would: "job 4711 trains 31 % slower since 14:05 UTC
// (1600 → 1100 samples/s: the usual level → the average since): GPU 3 is power-capped (SM clock
// at 64 % of its maximum)".
#ifndef GPUWARDEN_DIAGNOSE_TRAINING_H_
#define GPUWARDEN_DIAGNOSE_TRAINING_H_

#include "diagnose/business.h"

namespace gw::diagnose {

inline constexpr double kTrainingDropRatio = 0.2;

void RunTrainingChecks(RunContext& ctx);

}  // namespace gw::diagnose

#endif  // GPUWARDEN_DIAGNOSE_TRAINING_H_
