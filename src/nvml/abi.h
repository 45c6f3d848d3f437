// NVML C ABI, declared by this project from the facts in docs/nvml-notes.md.
//
// No nvml.h exists on our machines, so this file is the single place where the ABI of
// libnvidia-ml.so.1 is written down. It is shared by two sides that never link to each other:
//   - nvml/ (the agent side) resolves each function with dlsym and calls it through a pointer;
//   - sim/  (libnvml-sim.so) defines the same functions, so the compiler checks its signatures.
//
// Only what gpuwarden uses is declared. Layouts are checked against
// the sizes and offsets in docs/nvml-notes.md (tests/sim/abi_test.cpp). Plain C on purpose.
#ifndef GPUWARDEN_NVML_ABI_H_
#define GPUWARDEN_NVML_ABI_H_

#ifdef __cplusplus
extern "C" {
#endif

typedef int nvmlReturn_t;  // a C enum: 4 bytes

enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_DEPRECATED = 26,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_INVALID_STATE = 29,
  NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
  NVML_ERROR_UNKNOWN = 999,
};

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;

#define NVML_VALUE_NOT_AVAILABLE (-1)
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_SERIAL_BUFFER_SIZE 30
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE 80
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16

// ---- identity -------------------------------------------------------------------------------
typedef struct {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;  // device id << 16 | 0x10DE
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];  // "%08X:%02X:%02X.0"
} nvmlPciInfo_t;                                   // 68 bytes

enum {
  NVML_DEVICE_ARCH_AMPERE = 7,
  NVML_DEVICE_ARCH_ADA = 8,
  NVML_DEVICE_ARCH_HOPPER = 9,
  NVML_DEVICE_ARCH_BLACKWELL = 10
};

// ---- utilization and memory ------------------------------------------------------------------
typedef struct {
  unsigned int gpu;     // percent
  unsigned int memory;  // percent (memory controller)
} nvmlUtilization_t;

typedef struct {
  unsigned long long total, free, used;  // bytes
} nvmlMemory_t;                          // 24 bytes

typedef struct {
  unsigned int version;  // must be nvmlMemory_v2 == 0x02000028
  unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;  // 40 bytes: offsets 0/8/16/24/32

#define NVML_STRUCT_VERSION(type, ver) ((unsigned int)(sizeof(type) | ((ver) << 24U)))
#define nvmlMemory_v2 NVML_STRUCT_VERSION(nvmlMemory_v2_t, 2)

typedef int nvmlSamplingType_t;
enum {
  NVML_TOTAL_POWER_SAMPLES = 0,
  NVML_GPU_UTILIZATION_SAMPLES = 1,
  NVML_MEMORY_UTILIZATION_SAMPLES = 2,
  NVML_ENC_UTILIZATION_SAMPLES = 3,
  NVML_DEC_UTILIZATION_SAMPLES = 4,
  NVML_PROCESSOR_CLK_SAMPLES = 5,
  NVML_MEMORY_CLK_SAMPLES = 6,
  NVML_MODULE_POWER_SAMPLES = 7,
};

typedef int nvmlValueType_t;
enum {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
  NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
};

typedef union {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  long long sllVal;
  unsigned short usVal;
} nvmlValue_t;  // 8 bytes

typedef struct {
  unsigned long long timeStamp;  // CPU timestamp, microseconds since the Unix epoch
  nvmlValue_t sampleValue;
} nvmlSample_t;  // 16 bytes

// ---- thermal, power, clocks -----------------------------------------------------------------
enum { NVML_TEMPERATURE_GPU = 0 };
enum {
  NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0,
  NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1,
  NVML_TEMPERATURE_THRESHOLD_MEM_MAX = 2,
  NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3,
};
enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 };
enum { NVML_PSTATE_UNKNOWN = 32 };

// Clock-event ("throttle") reason bits.
#define nvmlClocksEventReasonGpuIdle 0x0000000000000001ULL
#define nvmlClocksEventReasonApplicationsClocksSetting 0x0000000000000002ULL
#define nvmlClocksEventReasonSwPowerCap 0x0000000000000004ULL
#define nvmlClocksThrottleReasonHwSlowdown 0x0000000000000008ULL
#define nvmlClocksEventReasonSyncBoost 0x0000000000000010ULL
#define nvmlClocksEventReasonSwThermalSlowdown 0x0000000000000020ULL
#define nvmlClocksThrottleReasonHwThermalSlowdown 0x0000000000000040ULL
#define nvmlClocksThrottleReasonHwPowerBrakeSlowdown 0x0000000000000080ULL
#define nvmlClocksEventReasonDisplayClockSetting 0x0000000000000100ULL

// ---- ECC, retirement, remapping, PCIe --------------------------------------------------------
enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };
enum { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 };
enum {
  NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
  NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1
};
enum { NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1 };

// ---- processes -------------------------------------------------------------------------------
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes, or NVML_VALUE_NOT_AVAILABLE
} nvmlProcessInfo_v1_t;              // 16 bytes

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;      // 0xFFFFFFFF without MIG
  unsigned int computeInstanceId;  // 0xFFFFFFFF without MIG
} nvmlProcessInfo_v2_t;            // 24 bytes: offsets 0/8/16/20

typedef struct {
  unsigned int pid;
  unsigned long long timeStamp;                    // CPU microseconds
  unsigned int smUtil, memUtil, encUtil, decUtil;  // percent
} nvmlProcessUtilizationSample_t;                  // 32 bytes: offsets 0/8/16/20/24/28

// ---- events ----------------------------------------------------------------------------------
#define nvmlEventTypeSingleBitEccError 0x0000000000000001ULL
#define nvmlEventTypeDoubleBitEccError 0x0000000000000002ULL
#define nvmlEventTypePState 0x0000000000000004ULL
#define nvmlEventTypeXidCriticalError 0x0000000000000008ULL
#define nvmlEventTypeClock 0x0000000000000010ULL
#define nvmlEventTypeMigConfigChange 0x0000000000000100ULL  // a MIG layout changed

typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID for XidCriticalError (999 = unknown)
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;  // 32 bytes: offsets 0/8/16/24/28

// ---- field values ----------------------------------------------------------------------------
enum {
  NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL = 38,
  NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL = 45,
  NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL = 52,
  NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL = 59,
  NVML_FI_DEV_MEMORY_TEMP = 82,
  NVML_FI_DEV_NVLINK_LINK_COUNT = 91,
  NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138,  // KiB, cumulative; scopeId = link or all
  NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139,
  NVML_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL = 160,
  NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY = 161,    // per link: scopeId = link index
  NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY = 162,  // per link
  NVML_FI_DEV_NVLINK_ERROR_DL_CRC = 163,       // per link
  NVML_FI_DEV_NVLINK_GET_STATE = 165,          // per link: 1 active, 0 inactive
  NVML_FI_DEV_POWER_AVERAGE = 185,
  NVML_FI_DEV_POWER_INSTANT = 186,
  NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT = 193,  // degrees below the limit (T.Limit), not °C
  NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT = 194,
  NVML_FI_DEV_TEMPERATURE_MEM_MAX_TLIMIT = 195,
  NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT = 196,
  NVML_FI_DEV_NVLINK_COUNT_XMIT_BYTES = 202,  // NVLink 5 byte counters
  NVML_FI_DEV_NVLINK_COUNT_RCV_BYTES = 204,
};
#define NVML_NVLINK_MAX_LINKS 36
enum {
  NVML_NVLINK_ERROR_DL_REPLAY = 0,
  NVML_NVLINK_ERROR_DL_RECOVERY = 1,
  NVML_NVLINK_ERROR_DL_CRC_FLIT = 2,
  NVML_NVLINK_ERROR_DL_CRC_DATA = 3,
  NVML_NVLINK_ERROR_DL_ECC_DATA = 4,
};

typedef struct {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;    // CPU microseconds
  long long latencyUsec;  // how long the driver took for this field
  nvmlValueType_t valueType;
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;  // 40 bytes: offsets 0/4/8/16/24/28/32

// ---- temperature, NVML 13 --------------------------------------------------------------------
typedef struct {
  unsigned int version;  // nvmlTemperature_v1
  int sensorType;        // NVML_TEMPERATURE_GPU
  int temperature;       // °C
} nvmlTemperature_t;     // 12 bytes: offsets 0/4/8
#define nvmlTemperature_v1 0x0100000CU

// ---- MIG -------------------------------------------------------------------------------------
enum { NVML_DEVICE_MIG_DISABLE = 0, NVML_DEVICE_MIG_ENABLE = 1 };
#define NVML_MIG_NO_INSTANCE 0xFFFFFFFFU  // gpuInstanceId/computeInstanceId without MIG

// ---- GPM (profiling counters; Hopper and newer) ----------------------------------------------
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;  // opaque, allocated by the library

typedef struct {
  unsigned int version;  // NVML_GPM_SUPPORT_VERSION
  unsigned int isSupportedDevice;
} nvmlGpmSupport_t;  // 8 bytes: offsets 0/4
#define NVML_GPM_SUPPORT_VERSION 1

typedef enum {
  NVML_GPM_METRIC_GRAPHICS_UTIL = 1,
  NVML_GPM_METRIC_SM_UTIL = 2,
  NVML_GPM_METRIC_SM_OCCUPANCY = 3,
  NVML_GPM_METRIC_INTEGER_UTIL = 4,
  NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,
  NVML_GPM_METRIC_DFMA_TENSOR_UTIL = 6,
  NVML_GPM_METRIC_HMMA_TENSOR_UTIL = 7,
  NVML_GPM_METRIC_DMMA_TENSOR_UTIL = 8,
  NVML_GPM_METRIC_IMMA_TENSOR_UTIL = 9,
  NVML_GPM_METRIC_DRAM_BW_UTIL = 10,
  NVML_GPM_METRIC_FP64_UTIL = 11,
  NVML_GPM_METRIC_FP32_UTIL = 12,
  NVML_GPM_METRIC_FP16_UTIL = 13,
  NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20,  // MiB/s
  NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21,
  NVML_GPM_METRIC_NVDEC_0_UTIL = 30,             // .. 37
  NVML_GPM_METRIC_NVJPG_0_UTIL = 40,             // .. 47
  NVML_GPM_METRIC_NVOFA_0_UTIL = 50,             // .. 51
  NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC = 60,  // MiB/s
  NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC = 61,
  NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC = 62,  // link n: RX = 62 + 2n, TX = 63 + 2n, n < 18
  NVML_GPM_METRIC_NVLINK_L0_TX_PER_SEC = 63,
  NVML_GPM_METRIC_NVLINK_L17_TX_PER_SEC = 97,
} nvmlGpmMetricId_t;
#define NVML_GPM_NVLINK_PER_LINK_MAX 18

typedef struct {
  unsigned int metricId;    // in: nvmlGpmMetricId_t
  nvmlReturn_t nvmlReturn;  // out: per metric
  double value;             // out: percent 0-100, or MiB/s for the *_PER_SEC metrics
  char* shortName;          // out, may be NULL (metricInfo in NVIDIA's header)
  char* longName;
  char* unit;
} nvmlGpmMetric_t;  // 40 bytes: offsets 0/4/8/16/24/32

// NVIDIA's header sizes `metrics` with NVML_GPM_METRIC_MAX, which grows between releases (333 in
// NVML 13). The library reads only `numMetrics` entries, so this project declares the array with
// its own bound: the header part (24 bytes) is what must match.
#define GW_GPM_METRICS_CAPACITY 64
typedef struct {
  unsigned int version;  // NVML_GPM_METRICS_GET_VERSION
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;  // the older sample
  nvmlGpmSample_t sample2;  // the newer sample
  nvmlGpmMetric_t metrics[GW_GPM_METRICS_CAPACITY];
} nvmlGpmMetricsGet_t;  // offsets 0/4/8/16/24
#define NVML_GPM_METRICS_GET_VERSION 1

// ---- functions -------------------------------------------------------------------------------
// Every function gpuwarden may resolve, as X(name, parameter list). The loader in nvml/ builds
// its pointer table from this list; sim/ defines each one. All return nvmlReturn_t.
#define GW_NVML_FUNCTIONS(X)                                                                       \
  X(nvmlInit_v2, (void))                                                                           \
  X(nvmlInit, (void))                                                                              \
  X(nvmlShutdown, (void))                                                                          \
  X(nvmlSystemGetDriverVersion, (char* version, unsigned int length))                              \
  X(nvmlSystemGetNVMLVersion, (char* version, unsigned int length))                                \
  X(nvmlSystemGetCudaDriverVersion_v2, (int* cudaDriverVersion))                                   \
  X(nvmlSystemGetCudaDriverVersion, (int* cudaDriverVersion))                                      \
  X(nvmlSystemGetProcessName, (unsigned int pid, char* name, unsigned int length))                 \
  X(nvmlDeviceGetCount_v2, (unsigned int* deviceCount))                                            \
  X(nvmlDeviceGetCount, (unsigned int* deviceCount))                                               \
  X(nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t* device))                     \
  X(nvmlDeviceGetHandleByIndex, (unsigned int index, nvmlDevice_t* device))                        \
  X(nvmlDeviceGetName, (nvmlDevice_t device, char* name, unsigned int length))                     \
  X(nvmlDeviceGetUUID, (nvmlDevice_t device, char* uuid, unsigned int length))                     \
  X(nvmlDeviceGetSerial, (nvmlDevice_t device, char* serial, unsigned int length))                 \
  X(nvmlDeviceGetPciInfo_v3, (nvmlDevice_t device, nvmlPciInfo_t * pci))                           \
  X(nvmlDeviceGetPciInfo_v2, (nvmlDevice_t device, nvmlPciInfo_t * pci))                           \
  X(nvmlDeviceGetMinorNumber, (nvmlDevice_t device, unsigned int* minorNumber))                    \
  X(nvmlDeviceGetIndex, (nvmlDevice_t device, unsigned int* index))                                \
  X(nvmlDeviceGetArchitecture, (nvmlDevice_t device, unsigned int* arch))                          \
  X(nvmlDeviceGetUtilizationRates, (nvmlDevice_t device, nvmlUtilization_t * utilization))         \
  X(nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t * memory))                         \
  X(nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t device, nvmlMemory_v2_t * memory))                   \
  X(nvmlDeviceGetEncoderUtilization,                                                               \
    (nvmlDevice_t device, unsigned int* utilization, unsigned int* samplingPeriodUs))              \
  X(nvmlDeviceGetDecoderUtilization,                                                               \
    (nvmlDevice_t device, unsigned int* utilization, unsigned int* samplingPeriodUs))              \
  X(nvmlDeviceGetSamples,                                                                          \
    (nvmlDevice_t device, nvmlSamplingType_t type, unsigned long long lastSeenTimeStamp,           \
     nvmlValueType_t* sampleValType, unsigned int* sampleCount, nvmlSample_t* samples))            \
  X(nvmlDeviceGetTemperature, (nvmlDevice_t device, int sensorType, unsigned int* temp))           \
  X(nvmlDeviceGetTemperatureThreshold,                                                             \
    (nvmlDevice_t device, int thresholdType, unsigned int* temp))                                  \
  X(nvmlDeviceGetFanSpeed, (nvmlDevice_t device, unsigned int* speed))                             \
  X(nvmlDeviceGetPowerUsage, (nvmlDevice_t device, unsigned int* power))                           \
  X(nvmlDeviceGetEnforcedPowerLimit, (nvmlDevice_t device, unsigned int* limit))                   \
  X(nvmlDeviceGetPowerManagementLimit, (nvmlDevice_t device, unsigned int* limit))                 \
  X(nvmlDeviceGetPowerManagementDefaultLimit, (nvmlDevice_t device, unsigned int* defaultLimit))   \
  X(nvmlDeviceGetPowerManagementLimitConstraints,                                                  \
    (nvmlDevice_t device, unsigned int* minLimit, unsigned int* maxLimit))                         \
  X(nvmlDeviceGetTotalEnergyConsumption, (nvmlDevice_t device, unsigned long long* energy))        \
  X(nvmlDeviceGetPerformanceState, (nvmlDevice_t device, int* pState))                             \
  X(nvmlDeviceGetClockInfo, (nvmlDevice_t device, int type, unsigned int* clock))                  \
  X(nvmlDeviceGetMaxClockInfo, (nvmlDevice_t device, int type, unsigned int* clock))               \
  X(nvmlDeviceGetCurrentClocksEventReasons,                                                        \
    (nvmlDevice_t device, unsigned long long* clocksEventReasons))                                 \
  X(nvmlDeviceGetCurrentClocksThrottleReasons,                                                     \
    (nvmlDevice_t device, unsigned long long* clocksThrottleReasons))                              \
  X(nvmlDeviceGetSupportedClocksEventReasons,                                                      \
    (nvmlDevice_t device, unsigned long long* supportedClocksEventReasons))                        \
  X(nvmlDeviceGetSupportedClocksThrottleReasons,                                                   \
    (nvmlDevice_t device, unsigned long long* supportedClocksThrottleReasons))                     \
  X(nvmlDeviceGetEccMode, (nvmlDevice_t device, int* current, int* pending))                       \
  X(nvmlDeviceGetTotalEccErrors,                                                                   \
    (nvmlDevice_t device, int errorType, int counterType, unsigned long long* eccCounts))          \
  X(nvmlDeviceGetRetiredPages,                                                                     \
    (nvmlDevice_t device, int cause, unsigned int* pageCount, unsigned long long* addresses))      \
  X(nvmlDeviceGetRetiredPagesPendingStatus, (nvmlDevice_t device, int* isPending))                 \
  X(nvmlDeviceGetRemappedRows,                                                                     \
    (nvmlDevice_t device, unsigned int* corrRows, unsigned int* uncRows, unsigned int* isPending,  \
     unsigned int* failureOccurred))                                                               \
  X(nvmlDeviceGetPcieReplayCounter, (nvmlDevice_t device, unsigned int* value))                    \
  X(nvmlDeviceGetPcieThroughput, (nvmlDevice_t device, int counter, unsigned int* value))          \
  X(nvmlDeviceGetComputeRunningProcesses_v3,                                                       \
    (nvmlDevice_t device, unsigned int* infoCount, nvmlProcessInfo_v2_t* infos))                   \
  X(nvmlDeviceGetComputeRunningProcesses_v2,                                                       \
    (nvmlDevice_t device, unsigned int* infoCount, nvmlProcessInfo_v2_t* infos))                   \
  X(nvmlDeviceGetComputeRunningProcesses,                                                          \
    (nvmlDevice_t device, unsigned int* infoCount, nvmlProcessInfo_v1_t* infos))                   \
  X(nvmlDeviceGetProcessUtilization,                                                               \
    (nvmlDevice_t device, nvmlProcessUtilizationSample_t * utilization,                            \
     unsigned int* processSamplesCount, unsigned long long lastSeenTimeStamp))                     \
  X(nvmlDeviceGetFieldValues, (nvmlDevice_t device, int valuesCount, nvmlFieldValue_t* values))    \
  X(nvmlDeviceGetTemperatureV, (nvmlDevice_t device, nvmlTemperature_t * temperature))             \
  X(nvmlDeviceGetNvLinkState, (nvmlDevice_t device, unsigned int link, int* isActive))             \
  X(nvmlDeviceGetNvLinkErrorCounter,                                                               \
    (nvmlDevice_t device, unsigned int link, int counter, unsigned long long* counterValue))       \
  X(nvmlDeviceGetMigMode,                                                                          \
    (nvmlDevice_t device, unsigned int* currentMode, unsigned int* pendingMode))                   \
  X(nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t device, unsigned int* count))                    \
  X(nvmlDeviceGetMigDeviceHandleByIndex,                                                           \
    (nvmlDevice_t device, unsigned int index, nvmlDevice_t* migDevice))                            \
  X(nvmlDeviceIsMigDeviceHandle, (nvmlDevice_t device, unsigned int* isMigDevice))                 \
  X(nvmlDeviceGetGpuInstanceId, (nvmlDevice_t device, unsigned int* id))                           \
  X(nvmlDeviceGetComputeInstanceId, (nvmlDevice_t device, unsigned int* id))                       \
  X(nvmlDeviceGetDeviceHandleFromMigDeviceHandle, (nvmlDevice_t migDevice, nvmlDevice_t * device)) \
  X(nvmlGpmQueryDeviceSupport, (nvmlDevice_t device, nvmlGpmSupport_t * gpmSupport))               \
  X(nvmlGpmSampleAlloc, (nvmlGpmSample_t * gpmSample))                                             \
  X(nvmlGpmSampleFree, (nvmlGpmSample_t gpmSample))                                                \
  X(nvmlGpmSampleGet, (nvmlDevice_t device, nvmlGpmSample_t gpmSample))                            \
  X(nvmlGpmMigSampleGet,                                                                           \
    (nvmlDevice_t device, unsigned int gpuInstanceId, nvmlGpmSample_t gpmSample))                  \
  X(nvmlGpmMetricsGet, (nvmlGpmMetricsGet_t * metricsGet))                                         \
  X(nvmlEventSetCreate, (nvmlEventSet_t * set))                                                    \
  X(nvmlDeviceRegisterEvents,                                                                      \
    (nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set))                      \
  X(nvmlDeviceGetSupportedEventTypes, (nvmlDevice_t device, unsigned long long* eventTypes))       \
  X(nvmlEventSetWait_v2, (nvmlEventSet_t set, nvmlEventData_t * data, unsigned int timeoutms))     \
  X(nvmlEventSetWait, (nvmlEventSet_t set, nvmlEventData_t * data, unsigned int timeoutms))        \
  X(nvmlEventSetFree, (nvmlEventSet_t set))

#define GW_NVML_DECLARE_FUNCTION(name, params) nvmlReturn_t name params;
GW_NVML_FUNCTIONS(GW_NVML_DECLARE_FUNCTION)
#undef GW_NVML_DECLARE_FUNCTION

const char* nvmlErrorString(nvmlReturn_t result);

// ---- simulator-only extensions ---------------------------------------------------------------
// Exported by libnvml-sim.so only; the real library has none of them, and nvml/ treats their
// absence as "this is a real driver". They never appear on a real machine's code path.

// Loads a scenario before nvmlInit. clock_mode: -1 = as the scenario says, 0 = real time x speed,
// 1 = stepped by the host. speed <= 0 keeps the scenario's. On failure returns
// NVML_ERROR_INVALID_ARGUMENT and writes "file:line: what is wrong" into error; while NVML is
// initialized it returns NVML_ERROR_IN_USE.
nvmlReturn_t nvmlSimConfigure(const char* scenario_path, int clock_mode, double speed, char* error,
                              unsigned int error_length);
// Stepped clock only: advances virtual time by milliseconds, running the physics on the way.
nvmlReturn_t nvmlSimAdvance(unsigned long long milliseconds);
// Virtual time in milliseconds since the scenario started.
nvmlReturn_t nvmlSimGetClock(unsigned long long* milliseconds);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // GPUWARDEN_NVML_ABI_H_
