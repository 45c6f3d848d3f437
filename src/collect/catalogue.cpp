#include "collect/catalogue.h"

namespace gw::collect {

const std::array<Family, kFamilyCount> kFamilies = {{
#define GW_FAMILY_ROW(id, name, type, unit, help, source) \
  {name, MetricType::type, unit, help, source},
    GW_DEVICE_FAMILIES(GW_FAMILY_ROW)
#undef GW_FAMILY_ROW
}};

const std::array<SlotInfo, kSlotCount> kSlots = {{
#define GW_SLOT_ROW(id, family, labels) {FamilyId::k##family, labels},
    GW_DEVICE_SLOTS(GW_SLOT_ROW)
#undef GW_SLOT_ROW
}};

const std::array<Family, kDynamicCount> kDynamicFamilies = {{
#define GW_DYNAMIC_ROW(id, name, type, unit, help, source) \
  {name, MetricType::type, unit, help, source},
    GW_DYNAMIC_FAMILIES(GW_DYNAMIC_ROW)
#undef GW_DYNAMIC_ROW
}};

Slot ClockEventActiveSlot(size_t reason_index) {
  return static_cast<Slot>(static_cast<size_t>(Slot::kEventGpuIdle) + reason_index);
}
Slot ClockEventSecondsSlot(size_t reason_index) {
  return static_cast<Slot>(static_cast<size_t>(Slot::kSecondsGpuIdle) + reason_index);
}

std::string_view XidMeaning(unsigned xid) {
  switch (xid) {
    case 13:
      return "graphics engine exception";
    case 31:
      return "GPU memory page fault";
    case 32:
      return "invalid or corrupted push buffer";
    case 43:
      return "GPU stopped processing";
    case 45:
      return "preemptive cleanup after earlier errors";
    case 46:
      return "GPU timeout";
    case 48:
      return "double-bit ECC error";
    case 61:
      return "internal micro-controller breakpoint";
    case 62:
      return "internal micro-controller halt";
    case 63:
      return "row remap or page retirement event";
    case 64:
      return "row remap or page retirement failure";
    case 68:
      return "video decoder exception";
    case 69:
      return "graphics class error";
    case 74:
      return "NVLink error";
    case 79:
      return "GPU fell off the bus";
    case 92:
      return "high single-bit ECC error rate";
    case 94:
      return "contained memory error";
    case 95:
      return "uncontained memory error";
    case 109:
      return "context-switch timeout";
    case 119:
      return "GSP RPC timeout";
    case 120:
      return "GSP error";
    case 140:
      return "unrecovered ECC error escape";
    case 154:
      return "GPU recovery action changed";
    default:
      return "";
  }
}

std::string_view XidAction(unsigned xid) {
  switch (xid) {
    case 13:
    case 31:
    case 68:
    case 69:
    case 94:
      return "restart the application";
    case 32:
      return "restart the application; check the application and CUDA version";
    case 43:
      return "usually none (application-level)";
    case 45:
      return "follow the XID that preceded it";
    case 46:
    case 95:
    case 109:
    case 140:
      return "reset the GPU";
    case 48:
      return "drain the node, reset the GPU, check remapped rows";
    case 61:
    case 62:
      return "reset the GPU; contact support";
    case 63:
      return "reset the GPU when convenient";
    case 64:
      return "reset the GPU; contact support (RMA candidate)";
    case 74:
      return "check NVLink; contact support";
    case 79:
      return "reboot the node; contact support";
    case 92:
      return "watch the trend of corrected ECC errors";
    case 119:
    case 120:
      return "reset the GPU; investigate the driver";
    case 154:
      return "read the GPU's recovery action";
    default:
      return "";
  }
}

}  // namespace gw::collect
