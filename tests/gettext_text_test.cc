// GettextText (document/gettext_text.h): a gettext catalogue's untranslated messages filled in,
// placeholders kept on their words, plural forms as the header counts them, everything else as
// libgettextpo read it; bad catalogues refused by name.
#include "document/gettext_text.h"

#include <gtest/gtest.h>

#include "tests/one_to_one_links.h"

namespace xlate {
namespace {

constexpr char kHeader[] =
    "msgid \"\"\n"
    "msgstr \"\"\n"
    "\"Project-Id-Version: app 1.0\\n\"\n"
    "\"Content-Type: text/plain; charset=CHARSET\\n\"\n"
    "\"Plural-Forms: nplurals=INTEGER; plural=EXPRESSION;\\n\"\n";

TEST(GettextText, ATemplatesMessagesAreFilledInAndTheRestKept) {
  const std::string source = std::string("# A comment kept.\n") + kHeader +
                             "\n"
                             "#. For translators.\n"
                             "#: src/main.c:42\n"
                             "#, c-format\n"
                             "msgid \"Welcome back, %s!\"\n"
                             "msgstr \"\"\n"
                             "\n"
                             "msgctxt \"menu\"\n"
                             "msgid \"Open the file\"\n"
                             "msgstr \"\"\n"
                             "\n"
                             "msgid \"Already done\"\n"
                             "msgstr \"Schon erledigt\"\n"
                             "\n"
                             "#, fuzzy\n"
                             "msgid \"A draft\"\n"
                             "msgstr \"Ein Entwurf\"\n"
                             "\n"
                             "msgid \"Usage: app FILE\\n\"\n"
                             "msgstr \"\"\n"
                             "\n"
                             "#~ msgid \"Gone\"\n"
                             "#~ msgstr \"Weg\"\n"
                             "\n"
                             "#~ msgid \"Never translated\"\n"
                             "#~ msgstr \"\"\n";
  auto catalogue = GettextText::Parse(source);
  ASSERT_TRUE(catalogue.ok()) << catalogue.status();
  EXPECT_EQ(catalogue->texts(),
            (std::vector<std::string>{"Welcome back,!", "Open the file", "Usage: app FILE"}));
  EXPECT_TRUE(catalogue->needs_word_links()) << "%s is placed by the word links";
  const std::string expected = std::string("# A comment kept.\n") +
                               "msgid \"\"\n"
                               "msgstr \"\"\n"
                               "\"Project-Id-Version: app 1.0\\n\"\n"
                               "\"Content-Type: text/plain; charset=UTF-8\\n\"\n"
                               "\"Plural-Forms: nplurals=INTEGER; plural=EXPRESSION;\\n\"\n"
                               "\n"
                               "#. For translators.\n"
                               "#: src/main.c:42\n"
                               "#, c-format\n"
                               "msgid \"Welcome back, %s!\"\n"
                               "msgstr \"WELCOME BACK, %s!\"\n"
                               "\n"
                               "msgctxt \"menu\"\n"
                               "msgid \"Open the file\"\n"
                               "msgstr \"OPEN THE FILE\"\n"
                               "\n"
                               "msgid \"Already done\"\n"
                               "msgstr \"Schon erledigt\"\n"
                               "\n"
                               "#, fuzzy\n"
                               "msgid \"A draft\"\n"
                               "msgstr \"Ein Entwurf\"\n"
                               "\n"
                               "msgid \"Usage: app FILE\\n\"\n"
                               "msgstr \"USAGE: APP FILE\\n\"\n"
                               "\n"
                               "#~ msgid \"Gone\"\n"
                               "#~ msgstr \"Weg\"\n";
  // An obsolete message never translated goes, as msgcat drops it.
  EXPECT_EQ(rebuild_upper(*catalogue), expected);
}

TEST(GettextText, PluralFormsAreAsManyAsTheHeaderCounts) {
  const std::string message =
      "\n"
      "#, c-format\n"
      "msgid \"%d file\"\n"
      "msgid_plural \"%d files\"\n"
      "msgstr[0] \"\"\n"
      "msgstr[1] \"\"\n";
  // A template's placeholder counts 2; a Russian catalogue's header 3.
  auto two = GettextText::Parse(kHeader + message);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->texts(), (std::vector<std::string>{"file", "files"}));
  EXPECT_NE(rebuild_upper(*two).find("msgstr[0] \"%d FILE\"\nmsgstr[1] \"%d FILES\"\n"),
            std::string::npos)
      << rebuild_upper(*two);
  const std::string russian =
      "msgid \"\"\n"
      "msgstr \"\"\n"
      "\"Content-Type: text/plain; charset=UTF-8\\n\"\n"
      "\"Plural-Forms: nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && n%10<=4 && "
      "(n%100<10 || n%100>=20) ? 1 : 2);\\n\"\n";
  auto three = GettextText::Parse(russian + message);
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_NE(rebuild_upper(*three).find("msgstr[0] \"%d FILE\"\nmsgstr[1] \"%d FILES\"\n"
                                       "msgstr[2] \"%d FILES\"\n"),
            std::string::npos)
      << rebuild_upper(*three);
}

TEST(GettextText, BadCataloguesAreRefusedByName) {
  auto syntax = GettextText::Parse(std::string(kHeader) + "\nmsgid \"open\nmsgstr \"\"\n");
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(syntax.status().message().find("not a gettext catalogue: line"), std::string::npos)
      << syntax.status();
  auto latin1 = GettextText::Parse(std::string(kHeader) + "\nmsgid \"caf\xe9\"\nmsgstr \"\"\n");
  ASSERT_FALSE(latin1.ok());
  EXPECT_NE(latin1.status().message().find("not UTF-8"), std::string::npos) << latin1.status();
  auto declared = GettextText::Parse(
      "msgid \"\"\nmsgstr \"Content-Type: text/plain; charset=ISO-8859-1\\n\"\n\n"
      "msgid \"cafe\"\nmsgstr \"\"\n");
  ASSERT_FALSE(declared.ok());
  EXPECT_NE(declared.status().message().find("charset=ISO-8859-1"), std::string::npos)
      << declared.status();
  EXPECT_NE(declared.status().message().find("msgconv"), std::string::npos);
}

TEST(GettextText, ACatalogueWithNothingToTranslateComesBackWhole) {
  const std::string source =
      "msgid \"\"\nmsgstr \"Content-Type: text/plain; charset=UTF-8\\n\"\n\n"
      "msgid \"Yes\"\nmsgstr \"Ja\"\n";
  auto catalogue = GettextText::Parse(source);
  ASSERT_TRUE(catalogue.ok()) << catalogue.status();
  EXPECT_TRUE(catalogue->texts().empty());
  EXPECT_EQ(catalogue->Rebuild({}, {}), source);
}

}  // namespace
}  // namespace xlate
