#include "document/epub_text.h"

#include <libxml/tree.h>

#include <map>
#include <stdexcept>
#include <utility>

#include "absl/strings/str_cat.h"
#include "document/xml_tree.h"

namespace xlate {
namespace {

constexpr char kContainerNamespace[] = "urn:oasis:names:tc:opendocument:xmlns:container";
constexpr char kPackageNamespace[] = "http://www.idpf.org/2007/opf";
constexpr char kContainer[] = "META-INF/container.xml";

bool is_element(const xmlNode* node, const char* namespace_uri, const char* name) {
  return node->type == XML_ELEMENT_NODE && node->ns != nullptr &&
         xmlStrcmp(node->ns->href, BAD_CAST namespace_uri) == 0 &&
         xmlStrcmp(node->name, BAD_CAST name) == 0;
}

std::string attribute(const xmlNode* node, const char* name) {
  xmlChar* value = xmlGetProp(node, BAD_CAST name);
  std::string out = value != nullptr ? reinterpret_cast<const char*>(value) : "";
  xmlFree(value);
  return out;
}

// The elements of a tree named `name` in `namespace_uri`, in document order.
std::vector<xmlNode*> elements_named(const XmlTree& tree, const char* namespace_uri,
                                     const char* name) {
  return elements_in_order(tree.get(), [&](const xmlNode* node) {
    return is_element(node, namespace_uri, name);
  });
}

absl::StatusOr<XmlTree> read_xml(const ZipArchive& archive, const std::string& name) {
  auto bytes = archive.Read(name);
  if (!bytes.ok()) {
    if (absl::IsNotFound(bytes.status())) {
      return absl::InvalidArgumentError(
          absl::StrCat("not an EPUB: ", bytes.status().message()));
    }
    return bytes.status();
  }
  auto tree = parse_xml(*bytes);
  if (!tree.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", tree.status().message()));
  }
  return tree;
}

// An href of the package document as the archive names the entry: relative to the package
// document's folder, its %XX escapes decoded, "." and ".." resolved.
std::string entry_of(const std::string& package, const std::string& href) {
  std::string decoded;
  for (size_t i = 0; i < href.size(); ++i) {
    if (href[i] == '%' && i + 2 < href.size() && std::isxdigit(href[i + 1]) &&
        std::isxdigit(href[i + 2])) {
      decoded += static_cast<char>(std::stoi(href.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else if (href[i] == '#') {
      break;
    } else {
      decoded += href[i];
    }
  }
  const size_t slash = package.rfind('/');
  const std::string path =
      slash == std::string::npos ? decoded : package.substr(0, slash + 1) + decoded;
  std::vector<std::string> segments;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string segment = path.substr(start, end - start);
    if (segment == "..") {
      if (!segments.empty()) segments.pop_back();
    } else if (!segment.empty() && segment != ".") {
      segments.push_back(segment);
    }
    start = end + 1;
  }
  std::string out;
  for (const std::string& segment : segments) out += (out.empty() ? "" : "/") + segment;
  return out;
}

// The content documents of the package `package`, in reading order: the spine's, then the
// manifest's other XHTML documents.
absl::StatusOr<std::vector<std::string>> content_documents(const ZipArchive& archive,
                                                            const std::string& package) {
  auto tree = read_xml(archive, package);
  if (!tree.ok()) return tree.status();
  std::map<std::string, std::string> xhtml_by_id;
  std::vector<std::string> manifest_order;
  for (const xmlNode* item : elements_named(*tree, kPackageNamespace, "item")) {
    if (attribute(item, "media-type") != "application/xhtml+xml") continue;
    const std::string name = entry_of(package, attribute(item, "href"));
    xhtml_by_id[attribute(item, "id")] = name;
    manifest_order.push_back(name);
  }
  std::vector<std::string> documents;
  const auto add = [&](const std::string& name) {
    if (std::find(documents.begin(), documents.end(), name) == documents.end() &&
        archive.contains(name)) {
      documents.push_back(name);
    }
  };
  for (const xmlNode* reference : elements_named(*tree, kPackageNamespace, "itemref")) {
    const auto found = xhtml_by_id.find(attribute(reference, "idref"));
    if (found != xhtml_by_id.end()) add(found->second);
  }
  for (const std::string& name : manifest_order) add(name);
  return documents;
}

}  // namespace

absl::StatusOr<EpubText> EpubText::Parse(std::string archive) {
  auto zip = ZipArchive::Open(std::move(archive));
  if (!zip.ok()) return zip.status();
  auto container = read_xml(*zip, kContainer);
  if (!container.ok()) return container.status();
  const std::vector<xmlNode*> roots =
      elements_named(*container, kContainerNamespace, "rootfile");
  if (roots.empty() || attribute(roots.front(), "full-path").empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not an EPUB: ", kContainer, " names no package document (rootfile)"));
  }
  const std::string package = entry_of("", attribute(roots.front(), "full-path"));
  auto documents = content_documents(*zip, package);
  if (!documents.ok()) return documents.status();
  EpubText epub(*std::move(zip));
  for (const std::string& name : *documents) {
    auto bytes = epub.archive_.Read(name);
    if (!bytes.ok()) return bytes.status();
    auto html = HtmlText::Parse(*std::move(bytes));
    if (!html.ok()) {
      return absl::Status(html.status().code(), absl::StrCat(name, ": ", html.status().message()));
    }
    epub.texts_.insert(epub.texts_.end(), html->texts().begin(), html->texts().end());
    epub.parts_.push_back({name, *std::move(html)});
  }
  return epub;
}

bool EpubText::needs_word_links() const {
  for (const Part& part : parts_) {
    if (part.document.needs_word_links()) return true;
  }
  return false;
}

std::vector<std::string> EpubText::parts() const {
  std::vector<std::string> names;
  for (const Part& part : parts_) names.push_back(part.name);
  return names;
}

std::string EpubText::Rebuild(const std::vector<std::string>& translations,
                              const std::vector<WordLinks>& links) const {
  CheckRebuild("EpubText", translations, links);
  std::map<std::string, std::string> replaced;
  size_t first = 0;
  for (const Part& part : parts_) {
    const size_t count = part.document.texts().size();
    const auto slice = [&](const auto& all) {
      return std::decay_t<decltype(all)>(all.begin() + static_cast<std::ptrdiff_t>(first),
                                         all.begin() + static_cast<std::ptrdiff_t>(first + count));
    };
    std::vector<WordLinks> part_links;
    if (part.document.needs_word_links()) part_links = slice(links);
    if (count > 0) replaced[part.name] = part.document.Rebuild(slice(translations), part_links);
    first += count;
  }
  auto archive = archive_.WithReplaced(replaced);
  if (!archive.ok()) {
    throw std::runtime_error(
        absl::StrCat("the EPUB cannot be written: ", archive.status().message()));
  }
  return *std::move(archive);
}

}  // namespace xlate
