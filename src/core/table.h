// A plain-text table printer for terminal output: columns aligned, numbers
// right-aligned.
#pragma once

#include <string>
#include <vector>

namespace tessel {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string Render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace tessel
