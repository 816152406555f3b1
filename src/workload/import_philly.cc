// Microsoft's Philly jobs as Pollux ships them (philly.csv:
// timestamp,duration,num_gpus,gpu_time,cluster); see trace.h. Also the UTC
// timestamp parser it needs (no locale or time-zone database involved).
#include <cctype>

#include "workload/importers.h"
#include "workload/model_mapping.h"

namespace tessel::workload_internal {

namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
// days_from_civil).
long long DaysFromCivil(long long y, unsigned m, unsigned d) {
  y -= m <= 2;
  const long long era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<long long>(doe) - 719468;
}

bool IsLeap(long long y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned DaysInMonth(long long y, unsigned m) {
  static const unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

}  // namespace

Result<double> ParseUtcTimestamp(std::string_view text, std::string_view what) {
  auto fail = [&] {
    return InvalidArgument(std::string(what) +
                           ": expected a UTC time YYYY-MM-DD HH:MM:SS, got '" +
                           std::string(text) + "'");
  };
  // Positions of the digits in "YYYY-MM-DD HH:MM:SS".
  if (text.size() != 19 || text[4] != '-' || text[7] != '-' ||
      (text[10] != ' ' && text[10] != 'T') || text[13] != ':' || text[16] != ':') {
    return fail();
  }
  auto num = [&](size_t pos, size_t len, long long& v) {
    v = 0;
    for (size_t i = pos; i < pos + len; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
      v = v * 10 + (text[i] - '0');
    }
    return true;
  };
  long long y, mo, d, h, mi, s;
  if (!num(0, 4, y) || !num(5, 2, mo) || !num(8, 2, d) || !num(11, 2, h) || !num(14, 2, mi) ||
      !num(17, 2, s)) {
    return fail();
  }
  if (mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, static_cast<unsigned>(mo)) || h > 23 ||
      mi > 59 || s > 59) {
    return fail();
  }
  long long days = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  return static_cast<double>(days * 86400 + h * 3600 + mi * 60 + s);
}

Status ImportPhilly(const ImportFile& in, Workload& out) {
  const CsvTable& t = in.table;
  SkipCounter skipped;
  size_t kept = 0, index = 0;
  for (const CsvRow& row : t.rows()) {
    std::string id = in.stem + "-" + std::to_string(index++);
    auto submit = ParseUtcTimestamp(t.Get(row, "timestamp"), t.Where(row, "timestamp"));
    if (!submit.ok()) return submit.status();
    auto duration = GetNumber(t, row, "duration");
    if (!duration.ok()) return duration.status();
    if (Status s = CheckTraceSeconds(t, row, "duration", *duration); !s.ok()) return s;
    auto gpus = GetCount(t, row, "num_gpus");
    if (!gpus.ok()) return gpus.status();
    if (*gpus == 0) {
      skipped.Add("num_gpus = 0", Origin(t, row));
      continue;
    }
    if (*duration <= 0) {
      skipped.Add("duration <= 0", Origin(t, row));
      continue;
    }
    JobSpec j = RigidMappedJob(std::move(id), Seconds(*submit), *duration,
                               static_cast<int>(*gpus), in.opts.seed);
    j.user = t.Get(row, "cluster");
    j.origin = Origin(t, row);
    out.jobs.push_back(std::move(j));
    ++kept;
  }
  skipped.AppendNotes(in.stem, out.notes);
  out.notes.push_back(in.stem + ": " + ModelMappingNote(in.opts.seed, kept) +
                      "; user = the virtual cluster");
  return Status::Ok();
}

}  // namespace tessel::workload_internal
