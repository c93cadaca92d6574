package reversetext

import "strings"

// vocabulary is the words synthetic sentences are made of, written here,
// not downloaded, so the builtin needs no network: common English words.
var vocabulary = strings.Fields(`
the a an of to in on at by for with from about over under after before
between through during without within across along around behind beyond
time year people way day man woman child world life hand part place case
week company system program question work government number night point
home water room mother area money story fact month lot right study book
eye job word business issue side kind head house service friend father
power hour game line end member law car city community name president
team minute idea kid body information back parent face others level
office door health person art war history party result change morning
reason research girl guy moment air teacher force education river garden
mountain window bridge forest ocean island village market library kitchen
river letter music picture language science winter summer autumn spring
small large old new good bad long short high low early late young great
quiet bright dark warm cold heavy light quick slow simple strange careful
happy gentle brave clever golden silver ancient modern empty full open
is was are were has had makes takes gives finds keeps brings builds sees
walks reads writes carries follows opens closes paints watches remembers
learns teaches answers shows holds moves turns starts leaves grows crosses
slowly quickly quietly carefully often never always sometimes together
again almost already still here there today tomorrow yesterday soon
`)
