#include "io/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <system_error>

#include "core/check.h"

namespace refold::io {
namespace {

std::string errno_text(int error) { return std::generic_category().message(error); }

std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// InputFile

InputFile::InputFile(const std::filesystem::path& path, std::string_view what)
    : name_(fmt::format("{} '{}'", what, path.string())) {
  // O_NONBLOCK: opening a FIFO without it waits for a writer; it is cleared again below and has
  // no effect on regular files anyway.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  REFOLD_CHECK(fd_ >= 0, "{}: cannot open: {}", name_, errno_text(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int error = errno;
    ::close(fd_);
    fail("{}: cannot stat: {}", name_, errno_text(error));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    fail("{}: is {}, expected a regular file", name_, file_kind(st.st_mode));
  }
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0) ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
  size_ = static_cast<std::uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::read_at(std::uint64_t offset, std::span<std::byte> out) const {
  std::uint64_t done = 0;
  while (done < out.size()) {
    const std::uint64_t remaining = out.size() - done;
    // pread takes an off_t; Linux reads at most 0x7ffff000 bytes per call anyway.
    const auto chunk = static_cast<std::size_t>(std::min<std::uint64_t>(remaining, 1u << 30));
    const ::ssize_t n = ::pread(fd_, out.data() + done, chunk, static_cast<::off_t>(offset + done));
    const int error = errno;
    if (n < 0 && error == EINTR) continue;
    REFOLD_CHECK(n >= 0, "{}: read of {} bytes at offset {} failed: {}", name_, remaining,
                 offset + done, errno_text(error));
    REFOLD_CHECK(n > 0,
                 "{}: file ended at byte {} while reading {} bytes at offset {} (was {} "
                 "bytes when opened; did it change?)",
                 name_, offset + done, out.size(), offset, size_);
    done += static_cast<std::uint64_t>(n);
  }
}

// ---------------------------------------------------------------------------------------------
// AtomicFileWriter

AtomicFileWriter::AtomicFileWriter(const std::filesystem::path& path, std::string_view what)
    : path_(path), name_(fmt::format("{} '{}'", what, path.string())) {
  REFOLD_CHECK(path.has_filename(), "{}: path names no file", name_);
  // A name unique to this process and call; O_EXCL guarantees we never write into a file that
  // someone else created. 0666 lets the umask decide the permissions, as for any new file.
  static std::atomic<std::uint64_t> counter{0};
  int error = 0;
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    std::filesystem::path candidate = path;
    candidate.replace_filename(
        fmt::format(".{}.tmp-{}-{}", path.filename().string(), ::getpid(), counter.fetch_add(1)));
    fd_ = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    error = errno;
    if (fd_ >= 0) temp_path_ = std::move(candidate);
    if (fd_ < 0 && error != EEXIST) break;
  }
  REFOLD_CHECK(fd_ >= 0, "{}: cannot create a temporary file next to it: {}", name_,
               errno_text(error));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!committed_) discard();
}

void AtomicFileWriter::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
  temp_path_.clear();
}

void AtomicFileWriter::write(std::span<const std::byte> bytes) {
  REFOLD_CHECK(fd_ >= 0 && !committed_, "{}: write after commit", name_);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ::ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    const int error = errno;
    if (n < 0 && error == EINTR) continue;
    REFOLD_CHECK(n > 0, "{}: write failed after {} bytes of this block: {}", name_, done,
                 n < 0 ? errno_text(error) : std::string("no progress"));
    done += static_cast<std::size_t>(n);
  }
}

void AtomicFileWriter::commit() {
  REFOLD_CHECK(fd_ >= 0 && !committed_, "{}: commit twice", name_);
  // fsync before rename: otherwise a crash can leave the new name pointing at an empty file.
  const int synced = ::fsync(fd_);
  REFOLD_CHECK(synced == 0, "{}: fsync failed: {}", name_, errno_text(errno));
  const int closed = ::close(fd_);
  const int close_error = errno;
  fd_ = -1;
  REFOLD_CHECK(closed == 0, "{}: close failed: {}", name_, errno_text(close_error));
  const int renamed = ::rename(temp_path_.c_str(), path_.c_str());
  const int rename_error = errno;
  REFOLD_CHECK(renamed == 0, "{}: cannot rename {} to it: {}", name_,
               temp_path_.filename().string(), errno_text(rename_error));
  committed_ = true;
  temp_path_.clear();
  // Make the rename itself durable; failing here changes nothing the caller can act on.
  std::filesystem::path dir = path_.parent_path();
  if (dir.empty()) dir = ".";
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace refold::io
