#include "document/gettext_text.h"

#include <gettext-po.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csetjmp>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "text/utf8.h"

namespace xlate {
namespace {

// libgettextpo's reader and writer keep global state: one catalogue at a time in the process.
std::mutex& gettext_mutex() {
  static std::mutex mutex;
  return mutex;
}

// What libgettextpo reported during one po_file_read or po_file_write. Its handler takes no user
// data, so the call in progress (which holds gettext_mutex) publishes its own here.
struct Reports {
  int errors = 0;
  std::string first_error;
  std::jmp_buf* fatal = nullptr;  // where a fatal error, after which it must not return, goes
};
Reports* reports_in_progress = nullptr;

void on_problem(int severity, po_message_t, const char*, size_t line, size_t, int,
                const char* text) {
  if (severity == PO_SEVERITY_WARNING) return;
  Reports& reports = *reports_in_progress;
  if (reports.errors++ == 0) {
    reports.first_error =
        absl::StrCat(line != static_cast<size_t>(-1) ? absl::StrCat("line ", line, ": ") : "",
                     absl::StripTrailingAsciiWhitespace(text));
  }
  if (severity == PO_SEVERITY_FATAL_ERROR) std::longjmp(*reports.fatal, 1);
}

void on_problem_pair(int severity, po_message_t message, const char* file, size_t line,
                     size_t column, int multiline, const char* text, po_message_t, const char*,
                     size_t, size_t, int, const char*) {
  on_problem(severity, message, file, line, column, multiline, text);
}

const po_xerror_handler kHandler = {on_problem, on_problem_pair};

// The C calls that report through the handler, each alone between its setjmp and a fatal
// error's longjmp, so that no C++ object lives in the frames a longjmp skips.
po_file_t read_po(const char* path, Reports& reports) {
  std::jmp_buf fatal;
  reports.fatal = &fatal;
  reports_in_progress = &reports;
  if (setjmp(fatal) != 0) return nullptr;
  return po_file_read(path, &kHandler);
}

bool write_po(po_file_t file, const char* path, Reports& reports) {
  std::jmp_buf fatal;
  reports.fatal = &fatal;
  reports_in_progress = &reports;
  if (setjmp(fatal) != 0) return false;
  return po_file_write(file, path, &kHandler) != nullptr;
}

// A file in memory (memfd_create) that libgettextpo opens by its /proc path like any file.
class MemoryFile {
 public:
  static absl::StatusOr<std::unique_ptr<MemoryFile>> Create(absl::string_view contents) {
    const int fd = memfd_create("xlate-gettext", MFD_CLOEXEC);
    if (fd < 0) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the catalogue cannot be held in memory: ", std::strerror(errno)));
    }
    auto file = std::unique_ptr<MemoryFile>(new MemoryFile(fd));
    for (size_t written = 0; written < contents.size();) {
      const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        return absl::ResourceExhaustedError(
            absl::StrCat("the catalogue cannot be held in memory: ", std::strerror(errno)));
      }
      written += static_cast<size_t>(n);
    }
    return file;
  }
  ~MemoryFile() { ::close(fd_); }
  std::string path() const { return absl::StrCat("/proc/self/fd/", fd_); }
  std::string Contents() const {
    struct stat facts {};
    if (::fstat(fd_, &facts) != 0) throw std::runtime_error("the catalogue cannot be read back");
    std::string contents(static_cast<size_t>(facts.st_size), '\0');
    for (size_t done = 0; done < contents.size();) {
      const ssize_t n =
          ::pread(fd_, contents.data() + done, contents.size() - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw std::runtime_error("the catalogue cannot be read back");
      done += static_cast<size_t>(n);
    }
    return contents;
  }

 private:
  explicit MemoryFile(int fd) : fd_(fd) {}
  const int fd_;
};

struct PoFileFree {
  void operator()(po_file_t file) const { po_file_free(file); }
};
using PoFile = std::unique_ptr<std::remove_pointer_t<po_file_t>, PoFileFree>;

struct MessageIteratorFree {
  void operator()(po_message_iterator_t iterator) const { po_message_iterator_free(iterator); }
};
using MessageIterator =
    std::unique_ptr<std::remove_pointer_t<po_message_iterator_t>, MessageIteratorFree>;

// The catalogue `source` as libgettextpo reads it (the caller holds gettext_mutex).
absl::StatusOr<PoFile> read_catalogue(const std::string& source) {
  auto memory = MemoryFile::Create(source);
  if (!memory.ok()) return memory.status();
  Reports reports;
  PoFile file(read_po((*memory)->path().c_str(), reports));
  if (file == nullptr || reports.errors > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not a gettext catalogue: ",
        reports.first_error.empty() ? "libgettextpo could not read it" : reports.first_error,
        reports.errors > 1 ? absl::StrCat(" (and ", reports.errors - 1, " more errors)") : ""));
  }
  return file;
}

// The charset a header's Content-Type names ("" when none).
std::string charset_of(const char* header) {
  if (header == nullptr) return "";
  std::unique_ptr<char, decltype(&std::free)> content_type(po_header_field(header, "Content-Type"),
                                                           &std::free);
  if (content_type == nullptr) return "";
  absl::string_view value = content_type.get();
  const size_t at = value.find("charset=");
  if (at == absl::string_view::npos) return "";
  value.remove_prefix(at + 8);
  return std::string(absl::StripAsciiWhitespace(value.substr(0, value.find(';'))));
}

// Whether a charset is one the catalogue may be read in as UTF-8: UTF-8 itself, ASCII (a subset)
// or a template's placeholder.
bool reads_as_utf8(absl::string_view charset) {
  return charset.empty() || absl::EqualsIgnoreCase(charset, "UTF-8") ||
         absl::EqualsIgnoreCase(charset, "UTF8") || charset == "CHARSET" ||
         absl::EqualsIgnoreCase(charset, "ASCII") || absl::EqualsIgnoreCase(charset, "US-ASCII");
}

// The plural forms the header's Plural-Forms names (nplurals=N), or 2 without one (a template's
// "nplurals=INTEGER", a header without the field).
int plural_forms_of(const char* header) {
  if (header == nullptr) return 2;
  std::unique_ptr<char, decltype(&std::free)> field(po_header_field(header, "Plural-Forms"),
                                                    &std::free);
  if (field == nullptr) return 2;
  absl::string_view value = field.get();
  const size_t at = value.find("nplurals=");
  if (at == absl::string_view::npos) return 2;
  value.remove_prefix(at + 9);
  int count = 0;
  if (!absl::SimpleAtoi(value.substr(0, value.find(';')), &count) || count < 1 || count > 100) {
    return 2;
  }
  return count;
}

bool untranslated(po_message_t message) {
  if (po_message_is_obsolete(message) || *po_message_msgid(message) == '\0') return false;
  if (po_message_msgid_plural(message) == nullptr) return *po_message_msgstr(message) == '\0';
  for (int form = 0; const char* text = po_message_msgstr_plural(message, form); ++form) {
    if (*text != '\0') return false;
  }
  return true;
}

// Calls visit(domain header, message) for every message to translate, in the catalogue's order.
template <typename Visit>
void for_each_untranslated(po_file_t file, Visit&& visit) {
  for (const char* const* domain = po_file_domains(file); *domain != nullptr; ++domain) {
    const char* header = po_file_domain_header(file, *domain);
    MessageIterator messages(po_message_iterator(file, *domain));
    while (po_message_t message = po_next_message(messages.get())) {
      if (untranslated(message)) visit(header, message);
    }
  }
}

}  // namespace

absl::StatusOr<GettextText> GettextText::Parse(std::string source) {
  size_t bad_byte = 0;
  if (!is_valid_utf8(source, &bad_byte)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the catalogue is not UTF-8 (byte ", bad_byte,
                     "): convert it first, e.g. `msgconv --to-code=UTF-8 in.po -o out.po`"));
  }
  std::lock_guard<std::mutex> lock(gettext_mutex());
  absl::StatusOr<PoFile> file = read_catalogue(source);
  if (!file.ok()) return file.status();
  for (const char* const* domain = po_file_domains(file->get()); *domain != nullptr; ++domain) {
    const std::string charset = charset_of(po_file_domain_header(file->get(), *domain));
    if (!reads_as_utf8(charset)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the catalogue's header says charset=", charset,
          "; xlate reads UTF-8 catalogues: convert it first, e.g. `msgconv --to-code=UTF-8 "
          "in.po -o out.po`"));
    }
  }
  GettextText catalogue;
  for_each_untranslated(file->get(), [&](const char* header, po_message_t message) {
    const char* plural = po_message_msgid_plural(message);
    Untranslated entry{message,
                       plural == nullptr ? 0 : plural_forms_of(header),
                       PlaceholderText(po_message_msgid(message)),
                       {}};
    if (plural != nullptr) entry.plural.emplace_back(plural);
    for (const PlaceholderText* text :
         {&entry.singular, entry.plural.empty() ? nullptr : &entry.plural[0]}) {
      if (text == nullptr) continue;
      catalogue.texts_.insert(catalogue.texts_.end(), text->texts().begin(), text->texts().end());
      catalogue.needs_word_links_ = catalogue.needs_word_links_ || text->needs_word_links();
    }
    catalogue.messages_.push_back(std::move(entry));
  });
  catalogue.catalogue_ = std::shared_ptr<void>(
      file->release(), [](void* read) { po_file_free(static_cast<po_file_t>(read)); });
  return catalogue;
}

std::string GettextText::Rebuild(const std::vector<std::string>& translations,
                                 const std::vector<WordLinks>& links) const {
  CheckRebuild("GettextText", translations, links);
  size_t next_text = 0;
  // A message text's translation, from the next of `translations` it has (none for a text that
  // is only placeholders and white space).
  const auto translated = [&](const PlaceholderText& text) {
    const size_t count = text.texts().size();
    const std::vector<std::string> mine(translations.begin() + next_text,
                                        translations.begin() + next_text + count);
    const std::vector<WordLinks> my_links =
        links.empty()
            ? std::vector<WordLinks>()
            : std::vector<WordLinks>(links.begin() + next_text, links.begin() + next_text + count);
    next_text += count;
    return text.Rebuild(mine, my_links);
  };
  std::lock_guard<std::mutex> lock(gettext_mutex());
  po_file_t file = static_cast<po_file_t>(catalogue_.get());
  for (const Untranslated& entry : messages_) {
    po_message_t message = static_cast<po_message_t>(entry.message);
    const std::string singular = translated(entry.singular);
    if (entry.plural.empty()) {
      po_message_set_msgstr(message, singular.c_str());
      continue;
    }
    const std::string plural = translated(entry.plural[0]);
    for (int form = 0; form < entry.plural_forms; ++form) {
      po_message_set_msgstr_plural(message, form, (form == 0 ? singular : plural).c_str());
    }
  }
  // The translations are UTF-8: a header that named another charset (ASCII, a template's
  // placeholder) says so now.
  for (const char* const* domain = po_file_domains(file); *domain != nullptr; ++domain) {
    const char* header = po_file_domain_header(file, *domain);
    if (header == nullptr || absl::EqualsIgnoreCase(charset_of(header), "UTF-8")) continue;
    std::unique_ptr<char, decltype(&std::free)> content_type(
        po_header_field(header, "Content-Type"), &std::free);
    std::string value =
        content_type == nullptr ? "text/plain; charset=UTF-8" : std::string(content_type.get());
    const size_t at = value.find("charset=");
    if (at == std::string::npos) {
      value += "; charset=UTF-8";
    } else {
      const size_t end = value.find(';', at);
      value.replace(at, end == std::string::npos ? std::string::npos : end - at, "charset=UTF-8");
    }
    std::unique_ptr<char, decltype(&std::free)> updated(
        po_header_set_field(header, "Content-Type", value.c_str()), &std::free);
    MessageIterator messages(po_message_iterator(file, *domain));
    while (po_message_t message = po_next_message(messages.get())) {
      if (*po_message_msgid(message) == '\0' && po_message_msgctxt(message) == nullptr &&
          !po_message_is_obsolete(message)) {
        po_message_set_msgstr(message, updated.get());
        break;
      }
    }
  }
  absl::StatusOr<std::unique_ptr<MemoryFile>> written = MemoryFile::Create("");
  if (!written.ok()) throw std::runtime_error(std::string(written.status().message()));
  Reports reports;
  if (!write_po(file, (*written)->path().c_str(), reports) || reports.errors > 0) {
    throw std::runtime_error(
        absl::StrCat("the catalogue cannot be written: ", reports.first_error));
  }
  return (*written)->Contents();
}

}  // namespace xlate
