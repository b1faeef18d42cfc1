// OpenCV for the engine's image and video code, included once here: its 4.6 headers mix enum
// types, which C++20 deprecates (not our code to fix), so they are read with that warning off.
// And an Image8 as OpenCV holds it.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-enum-enum-conversion"
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>
#pragma GCC diagnostic pop

#include "core/io/image_io.h"

namespace ampgan::io {

// img (grey or RGB) as an 8-bit RGB matrix of its own: grey is expanded to three equal channels.
inline cv::Mat rgb_mat(const Image8& img) {
  const cv::Mat view(img.height, img.width, img.channels == 3 ? CV_8UC3 : CV_8UC1,
                     const_cast<uint8_t*>(img.pixels.data()));
  cv::Mat rgb;
  if (img.channels == 1)
    cv::cvtColor(view, rgb, cv::COLOR_GRAY2RGB);
  else
    rgb = view.clone();
  return rgb;
}

}  // namespace ampgan::io
