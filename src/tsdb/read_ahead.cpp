#include "tsdb/read_ahead.h"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <new>

namespace gw::tsdb {
namespace {

std::atomic<uint64_t> g_file_reads{0};
std::atomic<uint64_t> g_buffered_reads{0};

// Room kept after our File for the delegate's file object (the unix VFS needs ~100 bytes).
constexpr int kDelegateRoom = 2048;

struct File {
  sqlite3_file base;   // our pMethods
  sqlite3_file* real;  // the delegate's file, in the room after this struct
  bool main_db;
  sqlite3_int64 next;  // where the previous read ended (-1: unknown)
  sqlite3_int64 buf_off;
  int buf_len;         // 0: no buffer content
  unsigned char* buf;  // kReadAheadBytes, allocated at the first fill, freed at close
};

File* Of(sqlite3_file* f) {
  return reinterpret_cast<File*>(f);
}
sqlite3_file* Real(sqlite3_file* f) {
  return Of(f)->real;
}
const sqlite3_io_methods* M(sqlite3_file* f) {
  return Of(f)->real->pMethods;
}
// The buffer no longer stands for the file: locks or the file changed.
void Drop(sqlite3_file* f) {
  Of(f)->buf_len = 0;
  Of(f)->next = -1;
}

int Close(sqlite3_file* f) {
  delete[] Of(f)->buf;
  Of(f)->buf = nullptr;
  return M(f)->xClose(Real(f));
}

int Read(sqlite3_file* f, void* out, int n, sqlite3_int64 off) {
  File* file = Of(f);
  sqlite3_file* real = file->real;
  if (!file->main_db) return real->pMethods->xRead(real, out, n, off);
  if (file->buf_len > 0 && off >= file->buf_off && off + n <= file->buf_off + file->buf_len) {
    std::memcpy(out, file->buf + (off - file->buf_off), static_cast<size_t>(n));
    file->next = off + n;
    g_buffered_reads.fetch_add(1, std::memory_order_relaxed);
    return SQLITE_OK;
  }
  const bool sequential = off == file->next;
  file->next = off + n;
  g_file_reads.fetch_add(1, std::memory_order_relaxed);
  if (sequential && n < kReadAheadBytes) {
    sqlite3_int64 size = 0;
    if (real->pMethods->xFileSize(real, &size) == SQLITE_OK && off + n <= size) {
      const int len = static_cast<int>(std::min<sqlite3_int64>(kReadAheadBytes, size - off));
      if (file->buf == nullptr) file->buf = new (std::nothrow) unsigned char[kReadAheadBytes];
      file->buf_len = 0;
      if (file->buf != nullptr && real->pMethods->xRead(real, file->buf, len, off) == SQLITE_OK) {
        file->buf_off = off;
        file->buf_len = len;
        std::memcpy(out, file->buf, static_cast<size_t>(n));
        return SQLITE_OK;
      }
      // A failed fill: the plain read below answers as the delegate would.
    }
  }
  return real->pMethods->xRead(real, out, n, off);
}

int Write(sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
  Drop(f);
  return M(f)->xWrite(Real(f), buf, n, off);
}
int Truncate(sqlite3_file* f, sqlite3_int64 size) {
  Drop(f);
  return M(f)->xTruncate(Real(f), size);
}
int Sync(sqlite3_file* f, int flags) {
  Drop(f);
  return M(f)->xSync(Real(f), flags);
}
int FileSize(sqlite3_file* f, sqlite3_int64* size) {
  return M(f)->xFileSize(Real(f), size);
}
int Lock(sqlite3_file* f, int level) {
  Drop(f);
  return M(f)->xLock(Real(f), level);
}
int Unlock(sqlite3_file* f, int level) {
  Drop(f);
  return M(f)->xUnlock(Real(f), level);
}
int CheckReservedLock(sqlite3_file* f, int* out) {
  return M(f)->xCheckReservedLock(Real(f), out);
}
int FileControl(sqlite3_file* f, int op, void* arg) {
  Drop(f);
  return M(f)->xFileControl(Real(f), op, arg);
}
int SectorSize(sqlite3_file* f) {
  return M(f)->xSectorSize(Real(f));
}
int DeviceCharacteristics(sqlite3_file* f) {
  return M(f)->xDeviceCharacteristics(Real(f));
}
int ShmMap(sqlite3_file* f, int page, int size, int extend, void volatile** p) {
  Drop(f);
  if (M(f)->iVersion < 2) return SQLITE_IOERR;
  return M(f)->xShmMap(Real(f), page, size, extend, p);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  Drop(f);
  if (M(f)->iVersion < 2) return SQLITE_IOERR;
  return M(f)->xShmLock(Real(f), offset, n, flags);
}
void ShmBarrier(sqlite3_file* f) {
  if (M(f)->iVersion >= 2) M(f)->xShmBarrier(Real(f));
}
int ShmUnmap(sqlite3_file* f, int del) {
  Drop(f);
  if (M(f)->iVersion < 2) return SQLITE_OK;
  return M(f)->xShmUnmap(Real(f), del);
}
int Fetch(sqlite3_file* f, sqlite3_int64 off, int n, void** p) {
  if (M(f)->iVersion < 3) {
    *p = nullptr;
    return SQLITE_OK;
  }
  return M(f)->xFetch(Real(f), off, n, p);
}
int Unfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
  if (M(f)->iVersion < 3) return SQLITE_OK;
  return M(f)->xUnfetch(Real(f), off, p);
}

const sqlite3_io_methods kMethods = {3,
                                     Close,
                                     Read,
                                     Write,
                                     Truncate,
                                     Sync,
                                     FileSize,
                                     Lock,
                                     Unlock,
                                     CheckReservedLock,
                                     FileControl,
                                     SectorSize,
                                     DeviceCharacteristics,
                                     ShmMap,
                                     ShmLock,
                                     ShmBarrier,
                                     ShmUnmap,
                                     Fetch,
                                     Unfetch};

sqlite3_vfs g_vfs;
sqlite3_vfs* g_first = nullptr;  // the default VFS when ours was registered

// The default VFS now (never ours, should anyone make it the default).
sqlite3_vfs* Delegate() {
  sqlite3_vfs* d = sqlite3_vfs_find(nullptr);
  return d == nullptr || d == &g_vfs ? g_first : d;
}

int Open(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* out_flags) {
  File* file = Of(f);
  file->base.pMethods = nullptr;
  sqlite3_vfs* d = Delegate();
  if (d->szOsFile > kDelegateRoom) return SQLITE_CANTOPEN;
  file->real =
      reinterpret_cast<sqlite3_file*>(reinterpret_cast<unsigned char*>(file) + sizeof(File));
  file->main_db = (flags & SQLITE_OPEN_MAIN_DB) != 0;
  file->next = -1;
  file->buf_off = 0;
  file->buf_len = 0;
  file->buf = nullptr;
  std::memset(file->real, 0, static_cast<size_t>(d->szOsFile));
  const int rc = d->xOpen(d, name, file->real, flags, out_flags);
  if (rc == SQLITE_OK && file->real->pMethods != nullptr) file->base.pMethods = &kMethods;
  return rc;
}

int Delete(sqlite3_vfs*, const char* name, int sync_dir) {
  return Delegate()->xDelete(Delegate(), name, sync_dir);
}
int Access(sqlite3_vfs*, const char* name, int flags, int* out) {
  return Delegate()->xAccess(Delegate(), name, flags, out);
}
int FullPathname(sqlite3_vfs*, const char* name, int n, char* out) {
  return Delegate()->xFullPathname(Delegate(), name, n, out);
}
void* DlOpen(sqlite3_vfs*, const char* name) {
  return Delegate()->xDlOpen(Delegate(), name);
}
void DlError(sqlite3_vfs*, int n, char* out) {
  Delegate()->xDlError(Delegate(), n, out);
}
void (*DlSym(sqlite3_vfs*, void* handle, const char* symbol))(void) {
  return Delegate()->xDlSym(Delegate(), handle, symbol);
}
void DlClose(sqlite3_vfs*, void* handle) {
  Delegate()->xDlClose(Delegate(), handle);
}
int Randomness(sqlite3_vfs*, int n, char* out) {
  return Delegate()->xRandomness(Delegate(), n, out);
}
int Sleep(sqlite3_vfs*, int us) {
  return Delegate()->xSleep(Delegate(), us);
}
int CurrentTime(sqlite3_vfs*, double* out) {
  return Delegate()->xCurrentTime(Delegate(), out);
}
int GetLastError(sqlite3_vfs*, int n, char* out) {
  return Delegate()->xGetLastError(Delegate(), n, out);
}
int CurrentTimeInt64(sqlite3_vfs*, sqlite3_int64* out) {
  sqlite3_vfs* d = Delegate();
  if (d->iVersion >= 2 && d->xCurrentTimeInt64 != nullptr) return d->xCurrentTimeInt64(d, out);
  double days = 0;
  const int rc = d->xCurrentTime(d, &days);
  *out = static_cast<sqlite3_int64>(days * 86400000.0);
  return rc;
}

}  // namespace

const char* ReadAheadVfs() {
  static const bool registered = [] {
    g_first = sqlite3_vfs_find(nullptr);
    if (g_first == nullptr) return false;
    g_vfs = sqlite3_vfs{};
    g_vfs.iVersion = 2;
    g_vfs.szOsFile = static_cast<int>(sizeof(File)) + kDelegateRoom;
    g_vfs.mxPathname = g_first->mxPathname;
    g_vfs.zName = "gw-read-ahead";
    g_vfs.xOpen = Open;
    g_vfs.xDelete = Delete;
    g_vfs.xAccess = Access;
    g_vfs.xFullPathname = FullPathname;
    g_vfs.xDlOpen = DlOpen;
    g_vfs.xDlError = DlError;
    g_vfs.xDlSym = DlSym;
    g_vfs.xDlClose = DlClose;
    g_vfs.xRandomness = Randomness;
    g_vfs.xSleep = Sleep;
    g_vfs.xCurrentTime = CurrentTime;
    g_vfs.xGetLastError = GetLastError;
    g_vfs.xCurrentTimeInt64 = CurrentTimeInt64;
    return sqlite3_vfs_register(&g_vfs, /*makeDflt=*/0) == SQLITE_OK;
  }();
  return registered ? g_vfs.zName : nullptr;
}

ReadAheadStats ReadAheadCounts() {
  return {g_file_reads.load(std::memory_order_relaxed),
          g_buffered_reads.load(std::memory_order_relaxed)};
}

}  // namespace gw::tsdb
