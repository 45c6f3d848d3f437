// A SQLite VFS for the connection that reads block data (db_open.cpp): it forwards everything to
// the default VFS, except that a read of the main database file which starts where the previous
// one ended is answered from a read-ahead buffer of kReadAheadBytes, filled by one read of the
// file. A block of tens of KB lies in a chain of 512-byte overflow pages that compaction wrote
// one after another, so SQLite asks for them in file order, one pread(2) each: a cold query on
// the noise set made ~3,600 of them (docs/tsdb-format.md §5, "Cold reads: read-ahead").
//
// Coherence: the buffer is dropped whenever the connection's locks or the file change hands —
// every xLock, xUnlock, xShmLock (a WAL read transaction begins and ends with one), xWrite,
// xTruncate, xSync and xFileControl — so it never outlives the read transaction it was filled
// in. Within one, the database file's bytes of every page SQLite reads from it (pages with no
// newer frame in the WAL as of the transaction's snapshot) cannot change: a checkpoint copies
// only frames up to the oldest reader's mark. Other pages in the buffer may be stale, and SQLite
// never asks the file for them (it reads their WAL frame). A read reaching the end of the file,
// and every read of other files (WAL, journal), goes to the default VFS unchanged.
#ifndef GPUWARDEN_TSDB_READ_AHEAD_H_
#define GPUWARDEN_TSDB_READ_AHEAD_H_

#include <cstddef>
#include <cstdint>

namespace gw::tsdb {

inline constexpr int kReadAheadBytes = 64 * 1024;

// The VFS's name for sqlite3_open_v2, registered on first use (not as the default); nullptr when
// it could not be registered (the caller then opens with the default VFS). Each open delegates
// to the default VFS of that moment.
const char* ReadAheadVfs();

// Reads of main database files through this VFS, process-wide: those that went to the file
// (pass-through and buffer fills) and those answered from a buffer. For tests and benchmarks.
struct ReadAheadStats {
  uint64_t file_reads = 0;
  uint64_t buffered_reads = 0;
};
ReadAheadStats ReadAheadCounts();

}  // namespace gw::tsdb

#endif  // GPUWARDEN_TSDB_READ_AHEAD_H_
