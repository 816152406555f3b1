// A CSV reader (RFC 4180: quoted fields, doubled quotes, commas and newlines
// inside quotes) that remembers where each row came from, so callers can
// report errors as file:line: field.
#pragma once

#include <cstdint>

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace tessel {

struct CsvRow {
  int line = 0;  // 1-based line where the row starts in the file
  std::vector<std::string> fields;
};

// Bounds on what one CSV file may hold, checked while it is read so that a
// file of commas cannot take memory out of proportion to its size.
inline constexpr size_t kMaxCsvColumns = 1024;       // fields per row
inline constexpr size_t kMaxCsvCells = 50'000'000;   // fields per file

class CsvTable {
 public:
  // Parses `text` (a leading UTF-8 byte order mark is skipped); `source`
  // names it in errors (usually the path).
  static Result<CsvTable> Parse(std::string_view text, std::string source);
  static Result<CsvTable> ReadFile(const std::string& path);

  const std::string& source() const { return source_; }
  const std::vector<std::string>& header() const { return header_; }
  const std::vector<CsvRow>& rows() const { return rows_; }
  bool HasColumn(std::string_view name) const;

  // The raw text of `column` in `row`: "" when the row is short or the
  // header has no such column (optional columns, e.g. a native trace's
  // `app`; required ones are checked against the header by the readers).
  std::string Get(const CsvRow& row, std::string_view column) const;
  // Typed access; errors read "<file>:<line>: <column>: expected ...".
  Result<double> GetDouble(const CsvRow& row, std::string_view column) const;
  Result<long long> GetInt(const CsvRow& row, std::string_view column) const;
  // Empty field -> nullopt; malformed -> error.
  Result<std::optional<double>> GetOptionalDouble(const CsvRow& row,
                                                  std::string_view column) const;
  std::string Where(const CsvRow& row, std::string_view column) const;

 private:
  std::string source_;
  std::vector<std::string> header_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<CsvRow> rows_;
};

// The largest input file tessel reads whole (traces, clusters, models,
// parameters, measurements): 1 GiB.
inline constexpr uintmax_t kMaxInputFileBytes = uintmax_t{1} << 30;
// Reads a whole regular file of at most kMaxInputFileBytes; NotFound names
// a missing path, InvalidArgument a directory, device, FIFO or oversized file.
Result<std::string> ReadTextFile(const std::string& path);

}  // namespace tessel
