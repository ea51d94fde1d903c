// spandsp (Debian's libspandsp-dev): G.711 µ-law and A-law for the SIP gateway (ParleySIP). Only the headers G.711
// needs: spandsp.h would pull in libtiff's for fax.
#ifndef PARLEY_CSPANDSP_SHIM_H
#define PARLEY_CSPANDSP_SHIM_H
#include <stdint.h>
#include <stdlib.h>
#include <spandsp/telephony.h>
#include <spandsp/bit_operations.h>
#include <spandsp/g711.h>
#endif
