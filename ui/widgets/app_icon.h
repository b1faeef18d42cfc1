// The application icon. resources/icons/ampgan-studio.svg is the source (packaging installs it);
// Qt renders SVG only with its SVG plugin, which Debian ships separately (qt6-svg), so without it
// the same shapes are painted here with QPainter.
#pragma once

#include <QIcon>

namespace ampgan::ui {

QIcon app_icon();
void init_resources();  // the .qrc lives in a static library: register it once

}  // namespace ampgan::ui
