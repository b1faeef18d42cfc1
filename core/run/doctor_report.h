// The precision doctor's evidence and answer (precision_doctor.h), as the terminal shows them and
// as files in its folder: doctor.json (every candidate's figures, for programs), doctor.md (the
// same table for people) and doctor-config.json (the answer as a --config file for `ampgan train`).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/run/precision_doctor.h"

namespace ampgan {

// One row per candidate: its figures, its speed and activation memory against the FP32 reference
// and against plain AMP, and its verdict. Aligned text, or a Markdown table.
std::string doctor_table_text(const DoctorResult& r, bool markdown);
// The table's header and its rows (one a candidate, in the order tried; the answer's number
// marked "*"), as the terminal, doctor.md and the studio's Doctor tab show them.
const std::vector<std::string>& doctor_table_columns();
std::vector<std::vector<std::string>> doctor_table_rows(const DoctorResult& r);

// The answer as options of `ampgan train` ("--fp32-layers D.2"; empty for plain AMP), one string.
std::string doctor_answer_flags(const DoctorResult& r);

nlohmann::json doctor_json(const DoctorResult& r);
std::string doctor_markdown(const DoctorResult& r);

// Writes doctor.json, doctor.md and doctor-config.json into dir (each whole, atomically).
void write_doctor_report(const DoctorResult& r, const std::filesystem::path& dir);

constexpr const char* kDoctorJson = "doctor.json";
constexpr const char* kDoctorMarkdown = "doctor.md";
constexpr const char* kDoctorConfig = "doctor-config.json";

}  // namespace ampgan
