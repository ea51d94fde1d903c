// placeholder until the media helpers land
