#
#  Copyright (c) 2021. Los Alamos National Laboratory (LANL).
#  Written by: Bhanuka Mahanama (bhanuka@lanl.gov)
#                     Research and Prototyping Team, SRO-RL,
#                     Los Alamos National Laboratory
#
#  Correspondence: Lyudmila Balakireva, PhD (ludab@lanl.gov)
#                     Research and Prototyping Team, SRO-RL,
#                     Los Alamos National Laboratory
#
#  See LICENSE in the project root for license information.
#

class HeadersNotFoundError(Exception):
    pass


class HeaderTypeNotFoundError(Exception):
    pass


class LinkHeaderNotFoundError(Exception):
    pass


class HeaderParseError(Exception):
    pass


class LinkHeaderParseError(Exception):
    pass
