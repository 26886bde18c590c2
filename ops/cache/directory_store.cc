// The shared-directory backend (layout, ledger and admission protocol: docs/formats/cache.md).
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cache/item_codec.h"
#include "cache/store.h"
#include "common/crc32c.h"
#include "tensorflow/core/platform/errors.h"
#include "tensorflow/core/platform/logging.h"
#include "tensorflow/core/platform/mutex.h"

namespace tfliquid {
namespace cache {
namespace {

using tensorflow::Tensor;

constexpr char kLedgerMagic[8] = {'L', 'Q', 'C', 'L', 'E', 'D', 'G', '1'};
constexpr size_t kLedgerBytes = 36;

absl::Status PosixError(const std::string& what, const std::string& path) {
  return tensorflow::errors::Internal("MinIO cache: ", what, " ", path, ": ", std::strerror(errno));
}

bool ReadAll(int fd, char* data, uint64_t size) {
  for (uint64_t done = 0; done < size;) {
    const ssize_t n = pread(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    done += static_cast<uint64_t>(n);
  }
  return true;
}

bool WriteAll(int fd, const char* data, uint64_t size) {
  for (uint64_t done = 0; done < size;) {
    const ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<uint64_t>(n);
  }
  return true;
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

absl::Status MakeDirectory(const std::string& path) {
  if (mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return absl::OkStatus();
  return PosixError("cannot create", path);
}

// Calls visit(name) for every entry of `directory` but "." and "..".
template <typename Visit>
void ForEachEntry(const std::string& directory, Visit visit) {
  DIR* dir = opendir(directory.c_str());
  if (dir == nullptr) return;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") visit(name);
  }
  closedir(dir);
}

struct Ledger {
  uint64_t capacity = 0;
  Totals totals;
};

// tmp/HASH.WRITER.SEQ.BYTES.tmp -> (writer, bytes); false for any other name.
bool ParseTmpName(const std::string& name, uint64_t* writer, uint64_t* bytes) {
  unsigned long long w, seq, b;
  char hash[33];
  int consumed = 0;
  if (std::sscanf(name.c_str(), "%32[0-9a-f].%llu.%llu.%llu.tmp%n", hash, &w, &seq, &b, &consumed) != 4 ||
      consumed != static_cast<int>(name.size())) {
    return false;
  }
  *writer = w;
  *bytes = b;
  return true;
}

// A write lock on byte `slot` of DIR/WRITERS, owned by the open file description `fd` (an OFD lock: the kernel
// drops it however its holder dies, it conflicts between descriptions of one process too, and it means the same
// in every PID namespace, where a pid would not).
int LockSlot(int fd, uint64_t slot, int command) {
  struct flock lock = {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = static_cast<off_t>(slot);
  lock.l_len = 1;
  int result;
  while ((result = fcntl(fd, command, &lock)) != 0 && errno == EINTR) {
  }
  if (command == F_OFD_GETLK && result == 0) return lock.l_type == F_UNLCK ? 0 : -1;
  return result;
}

// Processes using the directory hold DIR/USERS: shared under policies that never evict, exclusive under one that
// does (it removes items other processes may have counted on). Held for the store's life (the cache registry
// keeps the store for the process's life, and the lock goes with the process).
absl::Status LockUsers(const std::string& directory, const PolicyInfo& info, int* users_fd) {
  const std::string path = directory + "/USERS";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return PosixError("cannot open", path);
  int locked;
  while ((locked = flock(fd, (info.evicts ? LOCK_EX : LOCK_SH) | LOCK_NB)) != 0 && errno == EINTR) {
  }
  if (locked == 0) {
    *users_fd = fd;
    return absl::OkStatus();
  }
  close(fd);
  if (errno != EWOULDBLOCK) return PosixError("cannot lock", path);
  return tensorflow::errors::FailedPrecondition(
      "MinIO cache directory ", directory, " is in use by another process ",
      info.evicts ? absl::StrCat("and the '", info.name, "' policy evicts, so it needs the directory to itself")
                  : std::string("whose cache policy evicts, so it holds the directory alone"),
      ": give each such process its own directory");
}

// The files a store holds open: the ledger (its flock orders the processes), USERS (held, see LockUsers) and
// WRITERS (a byte of it locked: this store's writer slot, which names its tmp files).
struct OpenFiles {
  int ledger = -1;
  int users = -1;
  int writers = -1;
};

// Creates the directory's layout where missing, joins its users and opens its ledger.
absl::Status OpenDirectory(const std::string& directory, const PolicyInfo& info, OpenFiles* files) {
  TF_RETURN_IF_ERROR(MakeDirectory(directory));
  TF_RETURN_IF_ERROR(MakeDirectory(directory + "/items"));
  TF_RETURN_IF_ERROR(MakeDirectory(directory + "/tmp"));
  TF_RETURN_IF_ERROR(LockUsers(directory, info, &files->users));
  const std::string writers_path = directory + "/WRITERS";
  files->writers = open(writers_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (files->writers < 0) {
    close(files->users);
    return PosixError("cannot open", writers_path);
  }
  const std::string ledger_path = directory + "/LEDGER";
  files->ledger = open(ledger_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (files->ledger < 0) {
    close(files->users);
    close(files->writers);
    return PosixError("cannot open", ledger_path);
  }
  return absl::OkStatus();
}

class DirectoryStore : public Store {
 public:
  DirectoryStore(std::string directory, uint64_t capacity, const PolicyInfo& info, std::unique_ptr<Policy> policy,
                 OpenFiles files)
      : directory_(std::move(directory)),
        capacity_(capacity),
        info_(info),
        policy_(std::move(policy)),
        ledger_fd_(files.ledger),
        users_fd_(files.users),
        writers_fd_(files.writers) {}
  ~DirectoryStore() override {
    close(ledger_fd_);
    close(users_fd_);
    close(writers_fd_);
  }

  // Checks the ledger against this cache's capacity (creating or rebuilding it), removes what writers that died
  // left behind, recounts the ledger from the directory (a writer may have died anywhere between its reservation
  // and its item's rename), and takes a writer slot.
  absl::Status Open() {
    LedgerLock lock(this);
    Ledger ledger;
    if (!ReadLedger(&ledger)) ledger = Rebuild();
    if (ledger.capacity != capacity_) {
      return tensorflow::errors::InvalidArgument(
          "MinIO cache directory ", directory_, " was created with capacity_bytes=", ledger.capacity,
          " but this cache asks for ", capacity_, ": use the same capacity, or another (or an emptied) directory");
    }
    TF_RETURN_IF_ERROR(ReclaimAndJoin());
    if (info_.evicts) TellPolicyWhatIsHeld();
    return absl::OkStatus();
  }

  absl::Status Lookup(const ItemKey& key, std::vector<Tensor>* values, bool* found) override {
    TF_RETURN_IF_ERROR(ReadItem(key.name, values, found));
    tensorflow::mutex_lock lock(policy_mu_);
    return policy_->Accessed(key, *found);
  }

  absl::Status Admit(const ItemKey& key, const std::vector<Tensor>& values, uint64_t* admitted_bytes) override {
    *admitted_bytes = 0;
    const uint64_t size = EncodedSize(key.name, values);
    const std::string hash = KeyHash(key.name);
    const std::string path = ItemPath(hash);
    std::string tmp;
    {
      LedgerLock lock(this);
      TF_RETURN_IF_ERROR(RecreateIfDeleted());
      Ledger ledger = ReadOrRebuildLedger();
      if (Exists(path)) return absl::OkStatus();
      std::vector<std::string> victims;  // only from an evicting policy, whose process holds the directory alone
      {
        tensorflow::mutex_lock policy_lock(policy_mu_);
        if (!policy_->Admit(key, size, ledger.totals.bytes, &victims)) return absl::OkStatus();
      }
      for (const std::string& victim : victims) Evict(victim, &ledger);
      // The reservation is the tmp file, made before the ledger counts it: whatever moment this process dies at,
      // the next open finds the file, sees its slot free, and recounts.
      tmp = TmpDir() + "/" + hash + "." + std::to_string(writer_slot_) + "." + std::to_string(next_tmp_++) + "." +
            std::to_string(size) + ".tmp";
      const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0) {
        LOG(WARNING) << "MinIO cache: cannot create " << tmp << ": " << std::strerror(errno);
        return WriteLedger(ledger);
      }
      close(fd);
      ledger.totals.bytes += size;
      ledger.totals.items += 1;
      TF_RETURN_IF_ERROR(WriteLedger(ledger));
    }
    std::string encoded;
    EncodeItem(key.name, values, &encoded);
    const bool written = WriteFile(tmp, encoded);
    LedgerLock lock(this);
    Ledger ledger = ReadOrRebuildLedger();
    if (!written || Exists(path) || !MakeDirectory(directory_ + "/items/" + hash.substr(0, 2)).ok() ||
        rename(tmp.c_str(), path.c_str()) != 0) {
      if (!written) LOG(WARNING) << "MinIO cache: cannot write " << tmp << ": " << std::strerror(errno);
      // A tmp file removed by someone else (a tmp cleaner) may have been recounted already: recount again.
      if (unlink(tmp.c_str()) != 0) return WriteLedger(Rebuild());
      Refund(&ledger, size);
      return WriteLedger(ledger);
    }
    *admitted_bytes = size;
    return absl::OkStatus();
  }

  absl::Status GetTotals(Totals* totals) override {
    LedgerLock lock(this);
    TF_RETURN_IF_ERROR(RecreateIfDeleted());
    *totals = ReadOrRebuildLedger().totals;
    return absl::OkStatus();
  }

  absl::Status Restore() override {
    LedgerLock lock(this);
    return RecreateIfDeleted();
  }

  absl::Status PlanPrefetch(double reads, std::vector<uint64_t>* items) override {
    LedgerLock lock(this);
    TF_RETURN_IF_ERROR(RecreateIfDeleted());
    Ledger ledger = ReadOrRebuildLedger();
    std::vector<std::string> victims;  // only from an evicting policy, whose process holds the directory alone
    {
      tensorflow::mutex_lock policy_lock(policy_mu_);
      policy_->PlanPrefetch(reads, ledger.totals.bytes, items, &victims);
    }
    if (victims.empty()) return absl::OkStatus();
    for (const std::string& victim : victims) Evict(victim, &ledger);
    return WriteLedger(ledger);
  }

 private:
  // The ledger's flock orders processes; the mutex orders this process's threads, which share one open file
  // description and so one flock.
  class LedgerLock {
   public:
    explicit LedgerLock(DirectoryStore* store) TF_NO_THREAD_SAFETY_ANALYSIS : store_(store) {
      store_->mu_.lock();
      while (flock(store_->ledger_fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
    }
    ~LedgerLock() TF_NO_THREAD_SAFETY_ANALYSIS {
      flock(store_->ledger_fd_, LOCK_UN);
      store_->mu_.unlock();
    }

   private:
    DirectoryStore* store_;
  };

  // A directory deleted while in use (a tmp cleaner, an operator emptying /dev/shm) leaves this process holding
  // a ledger file that no longer has a name: its counts would go on, and nothing could be admitted. The layout is
  // recreated, empty, and the new ledger locked in place of the old. Called under LedgerLock.
  absl::Status RecreateIfDeleted() {
    struct stat held, named;
    if (fstat(ledger_fd_, &held) == 0 && stat((directory_ + "/LEDGER").c_str(), &named) == 0 &&
        held.st_ino == named.st_ino && held.st_dev == named.st_dev) {
      return absl::OkStatus();
    }
    LOG(WARNING) << "MinIO cache: the directory " << directory_
                 << " was deleted while in use; recreating it (the items cached before are gone)";
    OpenFiles files;
    TF_RETURN_IF_ERROR(OpenDirectory(directory_, info_, &files));
    while (flock(files.ledger, LOCK_EX) != 0 && errno == EINTR) {
    }
    close(ledger_fd_);  // releases the old ledger's lock; LedgerLock releases the new one's
    close(users_fd_);
    close(writers_fd_);
    ledger_fd_ = files.ledger;
    users_fd_ = files.users;
    writers_fd_ = files.writers;
    return ReclaimAndJoin();  // another process may have recreated it first
  }

  // Under LedgerLock: removes the tmp files of writers that died (their slot is free), recounts the ledger, and
  // takes the first free writer slot. Dead writers' files go first, so a slot is never taken over with them.
  absl::Status ReclaimAndJoin() {
    writer_slot_ = kNoSlot;
    ForEachEntry(TmpDir(), [&](const std::string& name) {
      uint64_t writer, bytes;
      if (ParseTmpName(name, &writer, &bytes) && !WriterAlive(writer)) unlink((TmpDir() + "/" + name).c_str());
    });
    uint64_t slot = 0;
    for (; LockSlot(writers_fd_, slot, F_OFD_SETLK) != 0; ++slot) {
      if (errno != EAGAIN && errno != EACCES) return PosixError("cannot lock", directory_ + "/WRITERS");
    }
    writer_slot_ = slot;
    return WriteLedger(Rebuild());
  }

  // Whether the writer of slot `writer` (of this directory) still runs: a process holds the slot's lock. This
  // store's own lock does not conflict with its own test, so its slot is named.
  bool WriterAlive(uint64_t writer) const {
    if (writer == writer_slot_) return true;
    if (writer > static_cast<uint64_t>(std::numeric_limits<off_t>::max())) return false;
    return LockSlot(writers_fd_, writer, F_OFD_GETLK) != 0;
  }

  // Lookup without the policy: a damaged item is removed and reads as absent.
  absl::Status ReadItem(const std::string& key, std::vector<Tensor>* values, bool* found) {
    *found = false;
    const std::string path = ItemPath(KeyHash(key));
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? absl::OkStatus() : PosixError("cannot open", path);
    struct stat st;
    if (fstat(fd, &st) != 0) {
      close(fd);
      return PosixError("cannot stat", path);
    }
    std::string data, error;
    Decoded decoded = Decoded::kDamaged;
    if (static_cast<uint64_t>(st.st_size) > capacity_) {
      error = "larger than the cache's capacity";
    } else if (data.resize(st.st_size); !ReadAll(fd, data.data(), data.size())) {
      error = "shorter than its size";
    } else {
      decoded = DecodeItem(data.data(), data.size(), key, values, &error);
    }
    close(fd);
    if (decoded == Decoded::kOk) *found = true;
    if (decoded == Decoded::kDamaged) Discard(path, st.st_ino, error);
    return absl::OkStatus();
  }

  // The items a process that held the directory before left in it, named to the policy (an evicting one, whose
  // process holds the directory alone), so that it can evict them too. An unreadable header is skipped: a read
  // of that item finds it damaged and removes it.
  void TellPolicyWhatIsHeld() {
    tensorflow::mutex_lock lock(policy_mu_);
    ForEachEntry(directory_ + "/items", [&](const std::string& sub) {
      ForEachEntry(directory_ + "/items/" + sub, [&](const std::string& name) {
        std::string key;
        uint64_t size;
        if (ReadItemKey(directory_ + "/items/" + sub + "/" + name, &key, &size)) policy_->Held(key, size);
      });
    });
  }

  // The key an item file holds (docs/formats/cache.md) and the file's size.
  static bool ReadItemKey(const std::string& path, std::string* key, uint64_t* size) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char header[16];
    uint32_t key_length = 0;
    struct stat st;
    bool ok = fstat(fd, &st) == 0 && ReadAll(fd, header, sizeof(header)) &&
              std::memcmp(header, kItemMagic, sizeof(kItemMagic)) == 0;
    if (ok) std::memcpy(&key_length, header + 8, 4);
    ok = ok && key_length >= 1 && key_length <= kMaxKeyBytes &&
         sizeof(header) + key_length <= static_cast<uint64_t>(st.st_size);
    if (ok) {
      key->resize(key_length);
      ok = pread(fd, key->data(), key_length, sizeof(header)) == static_cast<ssize_t>(key_length);
      *size = static_cast<uint64_t>(st.st_size);
    }
    close(fd);
    return ok;
  }

  std::string TmpDir() const { return directory_ + "/tmp"; }
  std::string ItemPath(const std::string& hash) const {
    return directory_ + "/items/" + hash.substr(0, 2) + "/" + hash.substr(2) + ".item";
  }

  // Writes the tmp file Admit created (a file removed meanwhile is not made again).
  bool WriteFile(const std::string& path, const std::string& data) {
    const int fd = open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = WriteAll(fd, data.data(), data.size());
    return close(fd) == 0 && ok;
  }

  bool ReadLedger(Ledger* ledger) {
    char data[kLedgerBytes];
    uint32_t crc;
    if (!ReadAll(ledger_fd_, data, kLedgerBytes) || std::memcmp(data, kLedgerMagic, 8) != 0) return false;
    std::memcpy(&crc, data + 32, 4);
    if (crc != Crc32c(data, 32)) return false;
    std::memcpy(&ledger->capacity, data + 8, 8);
    std::memcpy(&ledger->totals.bytes, data + 16, 8);
    std::memcpy(&ledger->totals.items, data + 24, 8);
    return true;
  }

  Ledger ReadOrRebuildLedger() {
    Ledger ledger;
    if (ReadLedger(&ledger)) return ledger;
    LOG(WARNING) << "MinIO cache: the ledger of " << directory_ << " is damaged; rebuilding it from the items";
    ledger = Rebuild();
    WriteLedger(ledger).IgnoreError();
    return ledger;
  }

  absl::Status WriteLedger(const Ledger& ledger) {
    char data[kLedgerBytes];
    std::memcpy(data, kLedgerMagic, 8);
    std::memcpy(data + 8, &ledger.capacity, 8);
    std::memcpy(data + 16, &ledger.totals.bytes, 8);
    std::memcpy(data + 24, &ledger.totals.items, 8);
    const uint32_t crc = Crc32c(data, 32);
    std::memcpy(data + 32, &crc, 4);
    if (!WriteAll(ledger_fd_, data, kLedgerBytes)) return PosixError("cannot write", directory_ + "/LEDGER");
    return absl::OkStatus();
  }

  // The ledger from what is on disk: the items, and the reservations of processes still writing.
  Ledger Rebuild() {
    Ledger ledger;
    ledger.capacity = capacity_;
    ForEachEntry(directory_ + "/items", [&](const std::string& sub) {
      ForEachEntry(directory_ + "/items/" + sub, [&](const std::string& name) {
        struct stat st;
        if (stat((directory_ + "/items/" + sub + "/" + name).c_str(), &st) != 0) return;
        ledger.totals.bytes += static_cast<uint64_t>(st.st_size);
        ledger.totals.items += 1;
      });
    });
    ForEachEntry(TmpDir(), [&](const std::string& name) {
      uint64_t writer, bytes;
      if (ParseTmpName(name, &writer, &bytes) && WriterAlive(writer)) {
        ledger.totals.bytes += bytes;
        ledger.totals.items += 1;
      }
    });
    return ledger;
  }

  static void Refund(Ledger* ledger, uint64_t bytes) {
    ledger->totals.bytes -= std::min(bytes, ledger->totals.bytes);
    ledger->totals.items -= std::min<uint64_t>(1, ledger->totals.items);
  }

  // Removes an item the policy evicted (under the ledger lock), refunding its size on disk.
  void Evict(const std::string& key, Ledger* ledger) {
    const std::string path = ItemPath(KeyHash(key));
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && unlink(path.c_str()) == 0) Refund(ledger, static_cast<uint64_t>(st.st_size));
  }

  // Removes a damaged item, unless another process has already replaced it. Its size on disk may not be the size
  // that was admitted (a truncated or overwritten file), so the ledger is recounted from the directory: damage
  // is rare, and a recount can only be exact.
  void Discard(const std::string& path, ino_t inode, const std::string& why) {
    LOG(WARNING) << "MinIO cache: ignoring and removing damaged item " << path << ": " << why;
    LedgerLock lock(this);
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || st.st_ino != inode || unlink(path.c_str()) != 0) return;
    WriteLedger(Rebuild()).IgnoreError();
  }

  const std::string directory_;
  const uint64_t capacity_;
  const PolicyInfo& info_;
  // Its own lock, so that lookups never wait for the ledger, which another process may hold.
  tensorflow::mutex policy_mu_;
  const std::unique_ptr<Policy> policy_ TF_PT_GUARDED_BY(policy_mu_);
  int ledger_fd_;  // replaced, under mu_, when the directory is recreated
  int users_fd_;
  int writers_fd_;
  static constexpr uint64_t kNoSlot = std::numeric_limits<uint64_t>::max();
  uint64_t writer_slot_ = kNoSlot;  // taken under LedgerLock
  std::atomic<uint64_t> next_tmp_{0};
  tensorflow::mutex mu_;
};

}  // namespace

absl::Status NewDirectoryStore(const std::string& directory, uint64_t capacity_bytes, const PolicyInfo& info,
                               std::unique_ptr<Policy> policy, std::unique_ptr<Store>* store) {
  OpenFiles files;
  TF_RETURN_IF_ERROR(OpenDirectory(directory, info, &files));
  auto directory_store = std::make_unique<DirectoryStore>(directory, capacity_bytes, info, std::move(policy), files);
  TF_RETURN_IF_ERROR(directory_store->Open());
  *store = std::move(directory_store);
  return absl::OkStatus();
}

}  // namespace cache
}  // namespace tfliquid
