// Small string helpers used at the edges (CLI, CSV, YAML): splitting,
// trimming, strict number parsing, and "did you mean" lists of known names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessel {

std::vector<std::string> Split(std::string_view s, char sep);
std::string Trim(std::string_view s);
std::string ToLower(std::string_view s);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
bool StartsWith(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);
bool Contains(std::string_view s, std::string_view needle);

// Strict parsers: the whole string must be a number. `what` names the field
// in the error ("--gpus", "calibration.csv:12: num_gpus").
Result<double> ParseDouble(std::string_view s, std::string_view what);
Result<long long> ParseInt(std::string_view s, std::string_view what);


// "unknown gpu 'a1000'; known: a, b, c" with the closest names first when
// they are close enough to be likely typos.
std::string UnknownNameMessage(std::string_view kind, std::string_view name,
                               const std::vector<std::string>& known);

// Levenshtein distance, case-insensitive.
int EditDistance(std::string_view a, std::string_view b);

// Formats a double with `digits` significant decimals, no trailing noise.
std::string FormatDouble(double v, int precision = 4);

}  // namespace tessel
