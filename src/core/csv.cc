#include "core/csv.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/strings.h"

namespace tessel {

Result<std::string> ReadTextFile(const std::string& path) {
  // Only regular files, of a bounded size: a device (/dev/zero), a FIFO or a
  // directory given as input is refused before anything is read, instead of
  // exhausting memory, blocking forever or failing to parse.
  std::error_code ec;
  std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec || st.type() == std::filesystem::file_type::not_found) return NotFound("cannot open '" + path + "'");
  if (st.type() == std::filesystem::file_type::directory)
    return InvalidArgument("'" + path + "' is a directory; expected a file");
  if (st.type() != std::filesystem::file_type::regular)
    return InvalidArgument("'" + path + "' is not a regular file (a device, FIFO or socket); expected a file");
  uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return NotFound("cannot read '" + path + "': " + ec.message());
  if (size > kMaxInputFileBytes)
    return InvalidArgument("'" + path + "' is " + std::to_string(size) + " bytes; input files are limited to " +
                           std::to_string(kMaxInputFileBytes) + " bytes");
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<CsvTable> CsvTable::Parse(std::string_view text, std::string source) {
  CsvTable t;
  t.source_ = std::move(source);
  std::vector<CsvRow> records;
  CsvRow cur;
  std::string field;
  bool in_quotes = false, field_started = false;
  int line = 1;
  cur.line = 1;
  // A UTF-8 byte order mark (spreadsheets write one) is not part of the
  // first column's name.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  // Bounds are checked as each field ends (not per character); the first
  // one exceeded stops the parse.
  size_t cells = 0;
  std::string bound_error;
  auto end_field = [&] {
    if (cur.fields.size() >= kMaxCsvColumns) {
      bound_error = t.source_ + ":" + std::to_string(cur.line) + ": more than " + std::to_string(kMaxCsvColumns) +
                    " fields in a row";
    } else if (++cells > kMaxCsvCells) {
      bound_error = t.source_ + ":" + std::to_string(cur.line) + ": more than " + std::to_string(kMaxCsvCells) +
                    " fields in the file";
    }
    cur.fields.push_back(std::move(field));
    field.clear();
    field_started = false;
  };
  auto end_record = [&] {
    end_field();
    bool blank = cur.fields.size() == 1 && Trim(cur.fields[0]).empty();
    if (!blank) records.push_back(std::move(cur));
    cur = CsvRow();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          in_quotes = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"' && !field_started) {
      in_quotes = true;
      field_started = true;
    } else if (c == ',') {
      end_field();
      if (!bound_error.empty()) return InvalidArgument(bound_error);
    } else if (c == '\r') {
      // tolerate CRLF
    } else if (c == '\n') {
      end_record();
      if (!bound_error.empty()) return InvalidArgument(bound_error);
      ++line;
      cur.line = line;
    } else {
      field += c;
      field_started = true;
    }
  }
  if (in_quotes) {
    return InvalidArgument(t.source_ + ":" + std::to_string(cur.line) +
                           ": unterminated quoted field");
  }
  if (field_started || !cur.fields.empty()) end_record();
  if (!bound_error.empty()) return InvalidArgument(bound_error);
  if (records.empty()) return InvalidArgument(t.source_ + ": empty file, expected a header row");
  for (auto& h : records[0].fields) h = Trim(h);
  t.header_ = records[0].fields;
  for (size_t i = 0; i < t.header_.size(); ++i) t.index_[t.header_[i]] = i;
  for (size_t r = 1; r < records.size(); ++r) {
    if (records[r].fields.size() > t.header_.size()) {
      return InvalidArgument(t.source_ + ":" + std::to_string(records[r].line) + ": " +
                             std::to_string(records[r].fields.size()) + " fields, header has " +
                             std::to_string(t.header_.size()));
    }
    t.rows_.push_back(std::move(records[r]));
  }
  return t;
}

Result<CsvTable> CsvTable::ReadFile(const std::string& path) {
  auto text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  return Parse(*text, path);
}

bool CsvTable::HasColumn(std::string_view name) const {
  return index_.count(std::string(name)) > 0;
}

std::string CsvTable::Get(const CsvRow& row, std::string_view column) const {
  auto it = index_.find(std::string(column));
  if (it == index_.end() || it->second >= row.fields.size()) return "";
  return Trim(row.fields[it->second]);
}

std::string CsvTable::Where(const CsvRow& row, std::string_view column) const {
  return source_ + ":" + std::to_string(row.line) + ": " + std::string(column);
}

Result<double> CsvTable::GetDouble(const CsvRow& row, std::string_view column) const {
  return ParseDouble(Get(row, column), Where(row, column));
}

Result<long long> CsvTable::GetInt(const CsvRow& row, std::string_view column) const {
  return ParseInt(Get(row, column), Where(row, column));
}

Result<std::optional<double>> CsvTable::GetOptionalDouble(const CsvRow& row,
                                                          std::string_view column) const {
  std::string s = Get(row, column);
  if (s.empty()) return std::optional<double>();
  auto v = ParseDouble(s, Where(row, column));
  if (!v.ok()) return v.status();
  return std::optional<double>(*v);
}

}  // namespace tessel
