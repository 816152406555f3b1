// Test-only: a disk that fills up under SQLite. FaultyDisk registers, while
// it lives, a VFS over the default one as the default VFS; a Store opened
// meanwhile writes through it, and Set(kFull) makes every write fail as a
// full disk does (SQLITE_FULL, or an I/O error with errno ENOSPC) until
// Set(kNone). Used by store_test.cc and slurm_backend_test.cc.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <cerrno>

#include <gtest/gtest.h>

namespace tessel::testing_util {

enum class DiskFault { kNone, kFull, kIoErrorEnospc };
inline std::atomic<DiskFault> g_disk_fault{DiskFault::kNone};

struct FaultyFile {
  sqlite3_file base;
  sqlite3_file* real;  // the default VFS's file, allocated right after this
};

inline sqlite3_vfs* g_real_vfs = nullptr;

inline sqlite3_file* Real(sqlite3_file* f) { return reinterpret_cast<FaultyFile*>(f)->real; }

inline int FaultyWrite(sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
  switch (g_disk_fault.load()) {
    case DiskFault::kFull:
      return SQLITE_FULL;
    case DiskFault::kIoErrorEnospc:
      errno = ENOSPC;
      return SQLITE_IOERR_WRITE;
    case DiskFault::kNone:
      break;
  }
  return Real(f)->pMethods->xWrite(Real(f), buf, n, off);
}
inline int FaultyTruncate(sqlite3_file* f, sqlite3_int64 size) { return Real(f)->pMethods->xTruncate(Real(f), size); }
inline int FaultyClose(sqlite3_file* f) { return Real(f)->pMethods->xClose(Real(f)); }
inline int FaultyRead(sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
  return Real(f)->pMethods->xRead(Real(f), buf, n, off);
}
inline int FaultySync(sqlite3_file* f, int flags) { return Real(f)->pMethods->xSync(Real(f), flags); }
inline int FaultyFileSize(sqlite3_file* f, sqlite3_int64* size) { return Real(f)->pMethods->xFileSize(Real(f), size); }
inline int FaultyLock(sqlite3_file* f, int l) { return Real(f)->pMethods->xLock(Real(f), l); }
inline int FaultyUnlock(sqlite3_file* f, int l) { return Real(f)->pMethods->xUnlock(Real(f), l); }
inline int FaultyCheckReservedLock(sqlite3_file* f, int* out) { return Real(f)->pMethods->xCheckReservedLock(Real(f), out); }
inline int FaultyFileControl(sqlite3_file* f, int op, void* arg) { return Real(f)->pMethods->xFileControl(Real(f), op, arg); }
inline int FaultySectorSize(sqlite3_file* f) { return Real(f)->pMethods->xSectorSize(Real(f)); }
inline int FaultyDeviceCharacteristics(sqlite3_file* f) { return Real(f)->pMethods->xDeviceCharacteristics(Real(f)); }
inline int FaultyShmMap(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
  return Real(f)->pMethods->xShmMap(Real(f), region, size, extend, out);
}
inline int FaultyShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return Real(f)->pMethods->xShmLock(Real(f), offset, n, flags);
}
inline void FaultyShmBarrier(sqlite3_file* f) { Real(f)->pMethods->xShmBarrier(Real(f)); }
inline int FaultyShmUnmap(sqlite3_file* f, int del) { return Real(f)->pMethods->xShmUnmap(Real(f), del); }
inline int FaultyFetch(sqlite3_file* f, sqlite3_int64 off, int n, void** out) {
  *out = nullptr;  // no memory-mapped reads: every write goes through xWrite
  return SQLITE_OK;
}
inline int FaultyUnfetch(sqlite3_file* f, sqlite3_int64 off, void* p) { return SQLITE_OK; }

inline const sqlite3_io_methods kFaultyMethods = {
    3,
    FaultyClose,
    FaultyRead,
    FaultyWrite,
    FaultyTruncate,
    FaultySync,
    FaultyFileSize,
    FaultyLock,
    FaultyUnlock,
    FaultyCheckReservedLock,
    FaultyFileControl,
    FaultySectorSize,
    FaultyDeviceCharacteristics,
    FaultyShmMap,
    FaultyShmLock,
    FaultyShmBarrier,
    FaultyShmUnmap,
    FaultyFetch,
    FaultyUnfetch,
};

inline int FaultyOpen(sqlite3_vfs* vfs, const char* name, sqlite3_file* f, int flags, int* out_flags) {
  auto* ff = reinterpret_cast<FaultyFile*>(f);
  ff->real = reinterpret_cast<sqlite3_file*>(ff + 1);
  int rc = g_real_vfs->xOpen(g_real_vfs, name, ff->real, flags, out_flags);
  ff->base.pMethods = ff->real->pMethods != nullptr ? &kFaultyMethods : nullptr;
  return rc;
}

// The faulty VFS (never freed: a connection opened through it keeps a
// pointer to it until it closes).
inline sqlite3_vfs g_faulty_vfs;

// Installs the faulty VFS as the default one while it lives (the real one
// again afterwards); the disk is not full until Set says so.
class FaultyDisk {
 public:
  FaultyDisk() {
    sqlite3_vfs_unregister(&g_faulty_vfs);  // before its list link is overwritten
    if (g_real_vfs == nullptr) g_real_vfs = sqlite3_vfs_find(nullptr);
    g_faulty_vfs = *g_real_vfs;
    g_faulty_vfs.zName = "tessel-faulty-disk";
    g_faulty_vfs.szOsFile = static_cast<int>(sizeof(FaultyFile)) + g_real_vfs->szOsFile;
    g_faulty_vfs.xOpen = FaultyOpen;
    g_faulty_vfs.pNext = nullptr;
    g_disk_fault = DiskFault::kNone;
    EXPECT_EQ(sqlite3_vfs_register(&g_faulty_vfs, /*makeDflt=*/1), SQLITE_OK);
  }
  ~FaultyDisk() {
    g_disk_fault = DiskFault::kNone;
    sqlite3_vfs_unregister(&g_faulty_vfs);  // connections open through it keep working
    sqlite3_vfs_register(g_real_vfs, /*makeDflt=*/1);
  }
  FaultyDisk(const FaultyDisk&) = delete;
  FaultyDisk& operator=(const FaultyDisk&) = delete;
  void Set(DiskFault f) { g_disk_fault = f; }
};

}  // namespace tessel::testing_util
