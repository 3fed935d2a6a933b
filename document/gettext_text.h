// A gettext catalogue whose untranslated messages a translation fills in: a template (.pot) or a
// partly translated .po file, read and written by GNU gettext's own library (libgettextpo), so
// that the file comes back as gettext's tools write it (msgcat's layout), with every comment,
// reference, flag, context, obsolete translation and translation it had (an obsolete message
// never translated goes, as msgcat drops it).
//
// The messages translated are the live (not obsolete) ones with a msgid other than the header's
// and no translation yet (an empty msgstr, or every msgstr[i] empty); translated and fuzzy ones
// are left to their translators. A msgid (and a msgid_plural) is translated as text whose
// placeholders are kept (document/placeholder_text.h: %s, %1$d, %(name)s, {name}, ...), with the
// white space at its ends (a trailing "\n") as it was. A message with plural forms gets its
// singular's translation in msgstr[0] and its plural's in every other form, as many as the
// header's Plural-Forms names (nplurals; 2 when the header has none or a template's
// placeholder). A template's "charset=CHARSET" becomes UTF-8, which the translations are.
//
// libgettextpo's parser keeps global state, so every call into it is serialised (one catalogue
// at a time in the process); it reads and writes files, so the catalogue goes through memfd
// files of the process, not the disk. A catalogue is read once: libgettextpo 0.21 (Debian 12)
// keeps each msgctxt it reads (about 5 bytes of memory per context per catalogue read), which
// is its leak, not one xlate can free.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "document/placeholder_text.h"
#include "document/text_runs.h"

namespace xlate {

class GettextText : public TextRuns {
 public:
  // INVALID_ARGUMENT naming the line of a syntax error libgettextpo reports, a charset other than
  // UTF-8 (with the msgconv command that converts it), or text that is not UTF-8.
  static absl::StatusOr<GettextText> Parse(std::string source);

  const std::vector<std::string>& texts() const override { return texts_; }
  bool needs_word_links() const override { return needs_word_links_; }
  std::string Rebuild(const std::vector<std::string>& translations,
                      const std::vector<WordLinks>& links) const override;

 private:
  // A message to fill in, in the catalogue's order: its msgid's text and, with plural forms,
  // its msgid_plural's.
  struct Untranslated {
    void* message;     // libgettextpo's po_message_t, in catalogue_
    int plural_forms;  // msgstr[i] to fill: 0 for a message without plural forms
    PlaceholderText singular;
    std::vector<PlaceholderText> plural;  // none, or one
  };
  std::shared_ptr<void> catalogue_;  // libgettextpo's po_file_t, as read
  std::vector<Untranslated> messages_;
  std::vector<std::string> texts_;
  bool needs_word_links_ = false;
};

}  // namespace xlate
